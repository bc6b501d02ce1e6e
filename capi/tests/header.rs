//! include/tracer.h is what cbindgen makes of the crate and cbindgen.toml: this test
//! regenerates it and fails when the checked-in header differs (the CI check of issue 30).
//! `TRACER_CAPI_BLESS=1 cargo test -p tracer-capi --test header` rewrites it.

use std::path::PathBuf;

#[test]
fn header_is_current() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("utf-8");
    let path = dir.join("include/tracer.h");
    if std::env::var_os("TRACER_CAPI_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/tracer.h");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "capi/include/tracer.h is not what cbindgen makes of capi/src: run \
         `TRACER_CAPI_BLESS=1 cargo test -p tracer-capi --test header` and commit it"
    );
}
