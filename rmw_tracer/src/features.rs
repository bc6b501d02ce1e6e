//! Optional rmw features (`rmw/features.h`) and whether rmw_tracer offers them.

/// Whether `feature` is offered.
///
/// - publication sequence numbers: yes, every write carries the publisher's own counter
///   (`Meta::sequence`), reported in `rmw_message_info_t::publication_sequence_number`;
/// - reception sequence numbers: no (a subscription ring drops the oldest sample on overflow
///   before anything could number it, so the numbers would have unexplained gaps);
/// - type discovery and dynamic messages: no, `:schema` carries the type but
///   `rmw_take_dynamic_message` is not built.
pub fn supported(feature: ffi::rmw_feature_t) -> bool {
    match feature {
        ffi::RMW_FEATURE_MESSAGE_INFO_PUBLICATION_SEQUENCE_NUMBER => true,
        ffi::RMW_FEATURE_MESSAGE_INFO_RECEPTION_SEQUENCE_NUMBER => false,
        ffi::RMW_MIDDLEWARE_SUPPORTS_TYPE_DISCOVERY => false,
        ffi::RMW_MIDDLEWARE_CAN_TAKE_DYNAMIC_MESSAGE => false,
        // A feature from a newer rmw than the headers we were built with.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn publication_sequence_numbers_only() {
        assert!(super::supported(
            ffi::RMW_FEATURE_MESSAGE_INFO_PUBLICATION_SEQUENCE_NUMBER
        ));
        assert!(!super::supported(
            ffi::RMW_FEATURE_MESSAGE_INFO_RECEPTION_SEQUENCE_NUMBER
        ));
        assert!(!super::supported(
            ffi::RMW_MIDDLEWARE_CAN_TAKE_DYNAMIC_MESSAGE
        ));
        assert!(!super::supported(99));
    }
}
