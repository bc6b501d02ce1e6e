//! The body of the CDR fuzz target (`fuzz/fuzz_targets/deserialize.rs`), kept in the library so
//! a normal test (`tests/cdr_fuzz_corpus.rs`) runs it over the committed seeds and a seeded
//! random corpus too.
//!
//! The bytes a peer sends are what `rmw_take` writes into the user's message, through the
//! unsafe walker of `decode`. Any input must end as a message or as an error about the bytes,
//! in C (rclpy, C programs) and in C++ (rclcpp) memory alike: never a write outside the
//! message, a crash, or an allocation beyond a small multiple of the input (a length is checked
//! against the bytes left before anything is allocated). Cheap checks on the way: C and C++
//! agree; a message serializes to bytes of the size the size pass gives, that deserialize to the
//! same bytes again; a take into a message that already holds data (rcl reuses the user's
//! message) gives what a take into a fresh one gives; after an error the message is still one
//! its fini function frees and that serializes.
//!
//! The message types are real ones, from the type support libraries of the ROS install
//! (`LD_LIBRARY_PATH` must reach them: `eval "$(tools/ros-env)"`), loaded as rcl loads them.

use std::alloc::Layout;
use std::ffi::{c_void, CStr, CString};
use std::ptr::NonNull;
use std::sync::OnceLock;

use ffi::introspection_cpp::rosidl_typesupport_introspection_cpp_MessageMembers;
use ffi::{rosidl_message_type_support_t, rosidl_typesupport_introspection_c__MessageMembers};

use super::{type_info, CdrError, Flavor, MessageType};

/// The message types the fuzz target deserializes into (the first input byte picks one):
/// test_msgs' every primitive, array, bounded and unbounded sequence, string, wstring and
/// nesting, and sensor_msgs' large-payload types. Appending keeps the committed seeds valid;
/// inserting or removing one changes what their first byte picks (rewrite them).
pub const EXERCISE_TYPES: &[(&str, &str)] = &[
    ("test_msgs", "BasicTypes"),
    ("test_msgs", "Arrays"),
    ("test_msgs", "UnboundedSequences"),
    ("test_msgs", "BoundedSequences"),
    ("test_msgs", "BoundedPlainSequences"),
    ("test_msgs", "Strings"),
    ("test_msgs", "WStrings"),
    ("test_msgs", "Nested"),
    ("test_msgs", "MultiNested"),
    ("test_msgs", "Builtins"),
    ("test_msgs", "Defaults"),
    ("test_msgs", "Empty"),
    ("sensor_msgs", "Image"),
    ("sensor_msgs", "PointCloud2"),
    ("sensor_msgs", "LaserScan"),
    ("sensor_msgs", "CameraInfo"),
    ("sensor_msgs", "JointState"),
];

/// Loads `lib<pkg>__<typesupport>.so` (from the library search path) and returns the message
/// type support handle of `pkg/msg/<name>` it offers: `typesupport` is
/// `rosidl_typesupport_introspection_c` or `_cpp` for an introspection handle,
/// `rosidl_typesupport_c` or `_cpp` for the dispatcher rcl passes. The library stays loaded.
///
/// # Safety
/// As for [`generated_handle`].
pub unsafe fn message_type_support(
    typesupport: &str,
    pkg: &str,
    name: &str,
) -> Result<*const rosidl_message_type_support_t, String> {
    // SAFETY: forwarded contract.
    let h = unsafe {
        generated_handle(
            &format!("lib{pkg}__{typesupport}.so"),
            &format!("{typesupport}__get_message_type_support_handle__{pkg}__msg__{name}"),
        )
    }?;
    Ok(h.cast())
}

/// Loads the library `lib` (from the library search path; never closed) and calls its
/// generated `const T * symbol(void)`, as rcl does to get a type support handle.
///
/// # Safety
/// Loading a library runs its initializers, and `symbol` is called as a function of no
/// arguments: `lib` must be a ROS type support library (generated code) and `symbol` one of
/// its `get_*_type_support_handle` functions.
pub unsafe fn generated_handle(lib: &str, symbol: &str) -> Result<*const c_void, String> {
    let lib = CString::new(lib).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated name; the caller vouches for what the library runs on load. It
    // is never closed, so what it returns below stays valid.
    let h = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if h.is_null() {
        // SAFETY: dlerror returns null or a NUL-terminated message of this thread's last error.
        let why = unsafe { libc::dlerror() };
        let why = if why.is_null() {
            String::new()
        } else {
            // SAFETY: non-null, NUL-terminated (above).
            unsafe { CStr::from_ptr(why) }
                .to_string_lossy()
                .into_owned()
        };
        return Err(format!(
            "dlopen {lib:?}: {why} (LD_LIBRARY_PATH must reach the ROS libraries: \
             eval \"$(tools/ros-env)\")"
        ));
    }
    let sym = CString::new(symbol).map_err(|e| e.to_string())?;
    // SAFETY: a valid library handle and a NUL-terminated symbol name.
    let f = unsafe { libc::dlsym(h, sym.as_ptr()) };
    if f.is_null() {
        return Err(format!("dlsym {sym:?}: no such function in {lib:?}"));
    }
    // SAFETY: per the contract, the symbol is a generated `const T * f(void)`.
    let f: unsafe extern "C" fn() -> *const c_void = unsafe { std::mem::transmute(f) };
    // SAFETY: as above; it returns a pointer to static data of the library.
    Ok(unsafe { f() })
}

/// A message of a type in memory of exactly its size (so that AddressSanitizer sees a write
/// past its end), made by the type support's own init function and freed by its fini function
/// on drop, as rclpy and rclcpp make the messages they take into.
pub struct MessageMemory {
    ptr: NonNull<u8>,
    layout: Layout,
    fini: unsafe extern "C" fn(*mut c_void),
}

impl MessageMemory {
    /// A default-initialized message of `t`. Panics for a service part (no handle of its own)
    /// or a type support without init and fini functions.
    pub fn new(t: &MessageType) -> MessageMemory {
        let h = t.introspection_handle();
        assert!(!h.is_null(), "{}: no type support handle", t.name());
        // Aligned for anything a message holds (8-byte integers, pointers, std:: objects).
        let layout = Layout::from_size_align(t.size_of().max(1), 16).expect("a message's size");
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { std::alloc::alloc(layout) })
            .unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        let p = ptr.as_ptr().cast::<c_void>();
        let missing = || panic!("{}: type support without init/fini functions", t.name());
        // SAFETY: `h` is an introspection handle of `t`'s flavor from a loaded library, so
        // `data` is that flavor's MessageMembers; `p` is `size_of` aligned bytes, not yet a
        // message, which is what init expects.
        let fini = unsafe {
            match t.flavor() {
                Flavor::C => {
                    let m =
                        &*((*h).data as *const rosidl_typesupport_introspection_c__MessageMembers);
                    let (Some(init), Some(fini)) = (m.init_function, m.fini_function) else {
                        missing()
                    };
                    init(p, ffi::ROSIDL_RUNTIME_C_MSG_INIT_ALL);
                    fini
                }
                Flavor::Cpp => {
                    let m =
                        &*((*h).data as *const rosidl_typesupport_introspection_cpp_MessageMembers);
                    let (Some(init), Some(fini)) = (m.init_function, m.fini_function) else {
                        missing()
                    };
                    init(
                        p,
                        ffi::introspection_cpp::rosidl_runtime_cpp_MessageInitialization_ALL,
                    );
                    fini
                }
            }
        };
        MessageMemory { ptr, layout, fini }
    }

    /// The message, for [`MessageType::serialize`] and [`MessageType::deserialize`].
    pub fn as_ptr(&mut self) -> *mut c_void {
        self.ptr.as_ptr().cast()
    }
}

impl Drop for MessageMemory {
    fn drop(&mut self) {
        // SAFETY: an initialized message of the type whose fini function this is; then its
        // memory, allocated with `layout` in `new`.
        unsafe {
            (self.fini)(self.ptr.as_ptr().cast());
            std::alloc::dealloc(self.ptr.as_ptr(), self.layout);
        }
    }
}

/// One of [`EXERCISE_TYPES`]: its C and C++ flavors, and its `ros2msg` schema (read from its
/// type support's own type description) for an independent decoder.
pub struct ExerciseType {
    pub c: MessageType,
    pub cpp: MessageType,
    pub schema: ros2msg::Schema,
}

/// Each of [`EXERCISE_TYPES`], loaded once. Panics when a type support library cannot be
/// loaded: the fuzz target and its corpus test need every one.
pub fn exercise_types() -> &'static [ExerciseType] {
    static TYPES: OnceLock<Vec<ExerciseType>> = OnceLock::new();
    TYPES.get_or_init(|| {
        let load = |ts: &str, pkg: &str, name: &str| {
            // SAFETY: a ROS type support library; its handle is static data of a library that
            // stays loaded.
            unsafe {
                let h = message_type_support(ts, pkg, name).unwrap_or_else(|e| panic!("{e}"));
                MessageType::from_type_support(h)
            }
            .unwrap_or_else(|e| panic!("{pkg}/msg/{name}: {e}"))
        };
        EXERCISE_TYPES
            .iter()
            .map(|(pkg, name)| {
                let c = load("rosidl_typesupport_introspection_c", pkg, name);
                // SAFETY: the introspection handle of a library that stays loaded.
                let info = unsafe { type_info(c.introspection_handle()) }
                    .unwrap_or_else(|e| panic!("{pkg}/msg/{name}: {e}"));
                let text = info
                    .definition
                    .expect("a Jazzy type support has its definition");
                let schema = ros2msg::Schema::parse(&info.type_name, &text)
                    .unwrap_or_else(|e| panic!("{pkg}/msg/{name}: {e}"));
                ExerciseType {
                    c,
                    cpp: load("rosidl_typesupport_introspection_cpp", pkg, name),
                    schema,
                }
            })
            .collect()
    })
}

/// The first byte picks one of [`EXERCISE_TYPES`], the rest is a serialized message (its
/// encapsulation header included), taken into a C and a C++ message of that type. Returns what
/// it became: the message serialized again (the same bytes from C and C++), or the error of the
/// C take (the C++ take failed too); None for an empty input.
pub fn exercise_deserialize(bytes: &[u8]) -> Option<Result<Vec<u8>, CdrError>> {
    let (pick, payload) = bytes.split_first()?;
    let types = exercise_types();
    let ExerciseType { c, cpp, schema } = &types[usize::from(*pick) % types.len()];
    let in_c = take_checked(c, payload);
    let in_cpp = take_checked(cpp, payload);
    let taken = match (in_c, in_cpp) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "{}: C and C++ serialize different bytes", c.name());
            Ok(a)
        }
        (Err(e), Err(_)) => Err(e),
        (a, b) => panic!(
            "{}: C and C++ disagree: C {:?}, C++ {:?}",
            c.name(),
            a.map(|_| "ok").map_err(|e| e.to_string()),
            b.map(|_| "ok").map_err(|e| e.to_string()),
        ),
    };
    // An independent decoder (ros2msg, from the type's own definition) reads the same values in
    // the input as in what rmw_tracer wrote back: a field read or written at the wrong place, or
    // a value changed on the way, shows here even where C, C++ and the round trips agree. (Not
    // the other way round: ros2msg refuses strings that are not UTF-8, rmw_tracer does not.)
    if let Ok(v) = ros2msg::decode(schema, payload) {
        let out = taken.as_ref().unwrap_or_else(|e| {
            panic!(
                "{}: ros2msg reads the input, rmw_tracer refuses it: {e}",
                c.name()
            )
        });
        let back = ros2msg::decode(schema, out)
            .unwrap_or_else(|e| panic!("{}: ros2msg cannot read our bytes: {e}", c.name()));
        assert_eq!(
            back.to_json(),
            v.to_json(),
            "{}: the values changed in rmw_tracer's hands",
            c.name()
        );
    }
    Some(taken)
}

/// Deserializes `payload` as `rmw_take` does, into a fresh message and again into the same
/// one; returns the message serialized again, or the error (one about the bytes).
fn take_checked(t: &MessageType, payload: &[u8]) -> Result<Vec<u8>, CdrError> {
    let mut m = MessageMemory::new(t);
    // SAFETY: an initialized message of `t`, in `t`'s flavor, ours alone.
    let first = unsafe { t.deserialize(payload, m.as_ptr()) };
    // Whatever happened, the message is valid: it serializes, and the size pass agrees.
    let bytes = serialize_checked(t, &mut m);
    // A take into a message that already holds data (the last sample, or part of it after an
    // error) ends as one into a fresh message does: with the same bytes or the same error.
    // SAFETY: as above.
    let again = unsafe { t.deserialize(payload, m.as_ptr()) };
    match (first, again) {
        (Ok(()), Ok(())) => {
            assert_eq!(
                serialize_checked(t, &mut m),
                bytes,
                "{}: a take into a used message differs from one into a fresh message",
                t.name()
            );
            // What we serialize reads back as itself.
            let mut fresh = MessageMemory::new(t);
            // SAFETY: as above.
            unsafe { t.deserialize(&bytes, fresh.as_ptr()) }.unwrap_or_else(|e| {
                panic!(
                    "{}: our own serialization does not deserialize: {e}",
                    t.name()
                )
            });
            assert_eq!(
                serialize_checked(t, &mut fresh),
                bytes,
                "{}: serialize, deserialize, serialize changed the bytes",
                t.name()
            );
            Ok(bytes)
        }
        (Err(e), Err(e2)) => {
            assert!(
                e.is_bad_input(),
                "{}: not an error of the bytes: {e}",
                t.name()
            );
            assert_eq!(
                e.to_string(),
                e2.to_string(),
                "{}: a take into a used message fails otherwise",
                t.name()
            );
            Err(e)
        }
        (a, b) => panic!(
            "{}: a take into a used message ({b:?}) ends otherwise than one into a fresh \
             message ({a:?})",
            t.name()
        ),
    }
}

/// Serializes `m`, checking the size pass against the bytes.
fn serialize_checked(t: &MessageType, m: &mut MessageMemory) -> Vec<u8> {
    let mut out = Vec::new();
    // SAFETY: an initialized message of `t`, not mutated meanwhile.
    unsafe { t.serialize(m.as_ptr(), &mut out) }
        .unwrap_or_else(|e| panic!("{}: a taken message does not serialize: {e}", t.name()));
    // SAFETY: as above.
    let size = unsafe { t.serialized_size(m.as_ptr()) }.expect("the size pass of a message");
    assert_eq!(size, out.len(), "{}: size pass and bytes differ", t.name());
    out
}
