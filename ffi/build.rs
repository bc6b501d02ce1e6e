//! Generates the bindings to the ROS 2 C headers with bindgen, for Jazzy or Kilted.
//!
//! The headers are looked up package by package, so an overlay prefix (a colcon install) may
//! hold some packages and an underlay (the venv, /opt/ros/<distro>) the rest. Search order:
//! `RMW_TRACER_ROS_PREFIX` (one prefix or a `:`-separated list), every entry of
//! `AMENT_PREFIX_PATH`, the venv made by `tools/setup`
//! (`${RMW_TRACER_VENV:-$HOME/.cache/rmw_tracer/venv-<distro>}`), then `/opt/ros/<distro>`,
//! where `<distro>` is `ROS_DISTRO` (`jazzy` when unset).
//! Both include layouts are accepted: `include/<pkg>/<pkg>/x.h` (Humble and later) and
//! `include/<pkg>/x.h` (older merged installs).
//!
//! **Which distribution** the library is for is decided here, from the headers found: the
//! version of the rmw package that holds `rmw/rmw.h` (`share/rmw/package.xml`; 7.3 is Jazzy,
//! 7.8 Kilted). It is the crate's `ROS_DISTRO` constant; when `ROS_DISTRO` is set and names
//! another, the build fails (a shell with one distribution's prefixes and the other's name).
//! No cargo feature: the headers are the truth, and the code has no `cfg` for the difference
//! (docs/architecture.md, "ROS 2 distributions").

use std::collections::BTreeSet;
use std::env;
use std::path::{Path, PathBuf};

/// A package whose headers the wrappers include, and one header that proves it is there.
struct HeaderPackage {
    name: &'static str,
    marker: &'static str,
}

const HEADER_PACKAGES: &[HeaderPackage] = &[
    HeaderPackage {
        name: "rmw",
        marker: "rmw/rmw.h",
    },
    HeaderPackage {
        name: "rcutils",
        marker: "rcutils/allocator.h",
    },
    HeaderPackage {
        name: "rosidl_runtime_c",
        marker: "rosidl_runtime_c/message_type_support_struct.h",
    },
    HeaderPackage {
        name: "rosidl_runtime_cpp",
        marker: "rosidl_runtime_cpp/message_initialization.hpp",
    },
    HeaderPackage {
        name: "rosidl_typesupport_interface",
        marker: "rosidl_typesupport_interface/macros.h",
    },
    HeaderPackage {
        name: "rosidl_typesupport_introspection_c",
        marker: "rosidl_typesupport_introspection_c/message_introspection.h",
    },
    HeaderPackage {
        name: "rosidl_typesupport_introspection_cpp",
        marker: "rosidl_typesupport_introspection_cpp/message_introspection.hpp",
    },
    HeaderPackage {
        name: "rosidl_dynamic_typesupport",
        marker: "rosidl_dynamic_typesupport/types.h",
    },
];

/// The ROS 2 distributions the bindings are made for, by the major.minor versions of their rmw
/// package (`share/rmw/package.xml`).
const DISTRIBUTIONS: &[(&str, &[&str])] = &[("jazzy", &["7.3"]), ("kilted", &["7.8"])];

/// `ROS_DISTRO` when it is set and not empty.
fn wanted_distro() -> Option<String> {
    env::var("ROS_DISTRO").ok().filter(|d| !d.is_empty())
}

/// The distribution of the rmw headers in `rmw_include` (`<prefix>/include/rmw` or
/// `<prefix>/include`), from the version in `<prefix>/share/rmw/package.xml`.
fn headers_distro(rmw_include: &Path) -> Result<&'static str, String> {
    let prefix = rmw_include
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "include"))
        .and_then(Path::parent)
        .ok_or_else(|| format!("no prefix above {}", rmw_include.display()))?;
    let manifest = prefix.join("share/rmw/package.xml");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    let version = text
        .split_once("<version>")
        .and_then(|(_, rest)| rest.split_once("</version>"))
        .map(|(v, _)| v.trim())
        .ok_or_else(|| format!("no <version> in {}", manifest.display()))?;
    let minor: String = version.splitn(3, '.').take(2).collect::<Vec<_>>().join(".");
    DISTRIBUTIONS
        .iter()
        .find(|(_, versions)| versions.contains(&minor.as_str()))
        .map(|(name, _)| *name)
        .ok_or_else(|| {
            format!(
                "rmw {version} ({}) is neither Jazzy's (rmw 7.3) nor Kilted's (rmw 7.8)",
                manifest.display()
            )
        })
}

/// Libraries the bindings' functions live in; linked by every crate that uses `ffi`.
const LIBRARIES: &[&str] = &[
    "rmw",
    "rcutils",
    "rosidl_runtime_c",
    "rosidl_typesupport_introspection_c",
    "rosidl_typesupport_introspection_cpp",
    "rosidl_dynamic_typesupport",
];

/// `static const` QoS profiles of rmw/qos_profiles.h: internal linkage, so no symbol to bind.
/// `constants.c` (generated) takes their address in a real symbol instead.
const STATIC_QOS_PROFILES: &[&str] = &[
    "rmw_qos_profile_sensor_data",
    "rmw_qos_profile_parameters",
    "rmw_qos_profile_default",
    "rmw_qos_profile_services_default",
    "rmw_qos_profile_parameter_events",
    "rmw_qos_profile_system_default",
    "rmw_qos_profile_best_available",
    "rmw_qos_profile_unknown",
];

/// Integer macros whose C type bindgen cannot see (it picks the type from the value, and reads
/// `SIZE_MAX`/`UINT64_MAX` as -1). The types are the ones the rmw API uses them with.
#[derive(Debug)]
struct MacroTypes;

impl bindgen::callbacks::ParseCallbacks for MacroTypes {
    fn int_macro(&self, name: &str, _value: i64) -> Option<bindgen::callbacks::IntKind> {
        use bindgen::callbacks::IntKind;
        let custom =
            |name: &'static str, is_signed: bool| Some(IntKind::Custom { name, is_signed });
        if name.starts_with("RMW_RET_") {
            return custom("rmw_ret_t", true);
        }
        if name.starts_with("RCUTILS_RET_") {
            return custom("rcutils_ret_t", true);
        }
        match name {
            "RMW_DEFAULT_DOMAIN_ID" => {
                return Some(IntKind::Custom {
                    name: "usize",
                    is_signed: false,
                })
            }
            "RMW_MESSAGE_INFO_SEQUENCE_NUMBER_UNSUPPORTED" => return Some(IntKind::U64),
            _ => {}
        }
        let is_validity = ["RMW_TOPIC_", "RMW_NAMESPACE_", "RMW_NODE_NAME_"]
            .iter()
            .any(|p| name.starts_with(p))
            && (name.ends_with("_VALID") || name.contains("_INVALID_"));
        if is_validity {
            return Some(IntKind::Int);
        }
        if name.ends_with("_MAX_LENGTH")
            || name.ends_with("_MAX_NAME_LENGTH")
            || name.ends_with("_STORAGE_SIZE")
            || name.ends_with("_HASH_SIZE")
            || name == "RMW_INET_ADDRSTRLEN"
        {
            return Some(IntKind::Custom {
                name: "usize",
                is_signed: false,
            });
        }
        None
    }
}

/// `#define`s of the rmw headers that expand to an aggregate initializer (`{sec, nsec}`),
/// directly or through another such macro. bindgen would evaluate `{a, b}` as the comma
/// expression `b`, so they are kept out of the bindings and evaluated by the C compiler.
fn aggregate_macros(rmw_include: &Path) -> Vec<String> {
    fn headers(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                headers(&p, out);
            } else if p.extension().is_some_and(|x| x == "h") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    headers(&rmw_include.join("rmw"), &mut files);
    files.sort();
    let mut defines: Vec<(String, String)> = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for line in text.lines() {
            let Some(rest) = line.trim_start().strip_prefix("#define") else {
                continue;
            };
            let rest = rest.trim_start();
            let name_len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let (name, body) = rest.split_at(name_len);
            if name.is_empty() || body.starts_with('(') {
                continue;
            }
            let body = body.split("//").next().unwrap_or("").trim();
            defines.push((name.to_string(), body.to_string()));
        }
    }
    let mut aggregate: Vec<String> = Vec::new();
    loop {
        let before = aggregate.len();
        for (name, body) in &defines {
            if !aggregate.contains(name)
                && (body.starts_with('{') || aggregate.iter().any(|a| a == body))
            {
                aggregate.push(name.clone());
            }
        }
        if aggregate.len() == before {
            break;
        }
    }
    aggregate.sort();
    aggregate
}

fn candidate_prefixes(distro: &str) -> Vec<PathBuf> {
    let mut prefixes = Vec::new();
    for var in ["RMW_TRACER_ROS_PREFIX", "AMENT_PREFIX_PATH"] {
        if let Some(value) = env::var_os(var) {
            prefixes.extend(env::split_paths(&value).filter(|p| !p.as_os_str().is_empty()));
        }
    }
    match env::var_os("RMW_TRACER_VENV") {
        Some(venv) => prefixes.push(PathBuf::from(venv)),
        None => {
            if let Some(home) = env::var_os("HOME") {
                prefixes.push(Path::new(&home).join(format!(".cache/rmw_tracer/venv-{distro}")));
            }
        }
    }
    prefixes.push(PathBuf::from(format!("/opt/ros/{distro}")));
    let mut seen = BTreeSet::new();
    prefixes.retain(|p| seen.insert(p.clone()));
    prefixes
}

/// The include directory that makes `#include <marker>` work for `pkg` under `prefix`.
fn include_dir(prefix: &Path, pkg: &HeaderPackage) -> Option<PathBuf> {
    let isolated = prefix.join("include").join(pkg.name);
    if isolated.join(pkg.marker).is_file() {
        return Some(isolated);
    }
    let merged = prefix.join("include");
    merged.join(pkg.marker).is_file().then_some(merged)
}

fn library_dir(prefix: &Path, lib: &str) -> Option<PathBuf> {
    let dir = prefix.join("lib");
    dir.join(format!("lib{lib}.so")).is_file().then_some(dir)
}

fn not_found(what: &str, distro: &str, looked_in: &[PathBuf]) -> ! {
    let mut msg = format!(
        "rmw-tracer-ffi: cannot find {what} in any ROS 2 {distro} prefix.\nLooked in, in order:\n"
    );
    for p in looked_in {
        msg.push_str(&format!("  {}\n", p.display()));
    }
    msg.push_str(&format!(
        "(from RMW_TRACER_ROS_PREFIX, AMENT_PREFIX_PATH, the tools/setup venv \
         ${{RMW_TRACER_VENV:-$HOME/.cache/rmw_tracer/venv-{distro}}}, /opt/ros/{distro}).\n\
         Run ROS_DISTRO={distro} tools/setup to create the venv, or source a ROS 2 {distro} setup file."
    ));
    fail(&msg)
}

/// A plain message and exit: a panic would bury the message under a backtrace.
fn fail(msg: &str) -> ! {
    eprintln!("{msg}");
    std::process::exit(1);
}

fn main() {
    for var in [
        "RMW_TRACER_ROS_PREFIX",
        "AMENT_PREFIX_PATH",
        "RMW_TRACER_VENV",
        "ROS_DISTRO",
        "HOME",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=wrapper_cpp.hpp");

    let wanted = wanted_distro();
    let distro = wanted.as_deref().unwrap_or("jazzy");
    let prefixes = candidate_prefixes(distro);

    let mut includes: Vec<PathBuf> = Vec::new();
    for pkg in HEADER_PACKAGES {
        let dir = prefixes
            .iter()
            .find_map(|p| include_dir(p, pkg))
            .unwrap_or_else(|| {
                let looked: Vec<PathBuf> = prefixes
                    .iter()
                    .flat_map(|p| {
                        [
                            p.join("include").join(pkg.name).join(pkg.marker),
                            p.join("include").join(pkg.marker),
                        ]
                    })
                    .collect();
                not_found(
                    &format!("the headers of {} ({})", pkg.name, pkg.marker),
                    distro,
                    &looked,
                )
            });
        if !includes.contains(&dir) {
            includes.push(dir);
        }
    }
    // The wrapped headers include further packages (type_description_interfaces, ...): the
    // isolated layout gives each its own directory, so add every one beside the found packages.
    let found_roots: BTreeSet<PathBuf> = includes
        .iter()
        .filter_map(|d| d.parent().map(Path::to_path_buf))
        .collect();
    for root in &found_roots {
        if let Ok(entries) = std::fs::read_dir(root) {
            let mut extra: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|d| d.file_name().is_some_and(|n| d.join(n).is_dir()))
                .collect();
            extra.sort();
            for dir in extra {
                if !includes.contains(&dir) {
                    includes.push(dir);
                }
            }
        }
    }

    let mut link_dirs: Vec<PathBuf> = Vec::new();
    for lib in LIBRARIES {
        let dir = prefixes
            .iter()
            .find_map(|p| library_dir(p, lib))
            .unwrap_or_else(|| {
                let looked: Vec<PathBuf> = prefixes
                    .iter()
                    .map(|p| p.join("lib").join(format!("lib{lib}.so")))
                    .collect();
                not_found(&format!("lib{lib}.so"), distro, &looked)
            });
        if !link_dirs.contains(&dir) {
            link_dirs.push(dir);
        }
    }
    for dir in &link_dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in LIBRARIES {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
    // Downstream build scripts (and tools) can read these as DEP_ROS_INCLUDE / DEP_ROS_LIB
    // (and the distribution, printed above, as DEP_ROS_DISTRO).
    let join = |v: &[PathBuf]| env::join_paths(v).expect("paths without ':'");
    println!("cargo:include={}", join(&includes).to_string_lossy());
    println!("cargo:lib={}", join(&link_dirs).to_string_lossy());

    let include_args: Vec<String> = includes
        .iter()
        .map(|d| format!("-I{}", d.display()))
        .collect();
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));

    // Aggregate constants (durations, QoS profiles) as real symbols, compiled from the headers.
    let rmw_include = includes
        .iter()
        .find(|d| d.join("rmw/rmw.h").is_file())
        .expect("rmw include dir found above");
    let found = headers_distro(rmw_include)
        .unwrap_or_else(|e| fail(&format!("rmw-tracer-ffi: which ROS 2 distribution? {e}")));
    if wanted.as_deref().is_some_and(|w| w != found) {
        fail(&format!(
            "rmw-tracer-ffi: ROS_DISTRO={distro}, but the rmw headers found first ({}) are {found}'s.\n\
             Evaluate the distribution's environment (eval \"$(ROS_DISTRO={distro} tools/ros-env)\") \
             or set ROS_DISTRO={found}.",
            rmw_include.display()
        ));
    }
    println!("cargo:rustc-env=RMW_TRACER_ROS_DISTRO={found}");
    println!("cargo:distro={found}");
    let aggregates = aggregate_macros(rmw_include);
    let mut c_decl = String::from(
        "/* Generated by ffi/build.rs: aggregate constants of rmw as linkable symbols. */\n\
         #include <rmw/qos_profiles.h>\n#include <rmw/time.h>\n#include <rmw/types.h>\n",
    );
    let mut c_def = String::new();
    let mut rust =
        String::from("// Generated by ffi/build.rs: safe reads of the aggregate constants.\n");
    for name in &aggregates {
        c_decl.push_str(&format!("extern const rmw_time_t rmw_tracer_ffi_{name};\n"));
        c_def.push_str(&format!(
            "const rmw_time_t rmw_tracer_ffi_{name} = {name};\n"
        ));
        rust.push_str(&format!(
            "/// `{name}` of the rmw headers, as the C compiler evaluates it.\n\
             pub fn {lower}() -> rmw_time_t {{\n    \
             // SAFETY: an immutable C object, initialized before any Rust code runs.\n    \
             unsafe {{ rmw_tracer_ffi_{name} }}\n}}\n",
            lower = name.to_lowercase()
        ));
    }
    for name in STATIC_QOS_PROFILES {
        c_decl.push_str(&format!(
            "extern const rmw_qos_profile_t *const rmw_tracer_ffi_{name};\n"
        ));
        c_def.push_str(&format!(
            "const rmw_qos_profile_t *const rmw_tracer_ffi_{name} = &{name};\n"
        ));
        rust.push_str(&format!(
            "/// `{name}` of rmw/qos_profiles.h.\n\
             pub fn {name}() -> rmw_qos_profile_t {{\n    \
             // SAFETY: points to an immutable C object that lives as long as the program.\n    \
             unsafe {{ *rmw_tracer_ffi_{name} }}\n}}\n"
        ));
    }
    std::fs::write(out.join("constants.h"), &c_decl).expect("write constants.h");
    std::fs::write(
        out.join("constants.c"),
        format!("#include \"constants.h\"\n{c_def}"),
    )
    .expect("write constants.c");
    std::fs::write(out.join("constants.rs"), rust).expect("write constants.rs");
    let mut cc = cc::Build::new();
    cc.file(out.join("constants.c"))
        .include(&out)
        .warnings(true);
    for dir in &includes {
        cc.include(dir);
    }
    cc.compile("rmw_tracer_ffi_constants");

    bindgen::Builder::default()
        .header("wrapper.h")
        .header(out.join("constants.h").to_string_lossy())
        .clang_args(&include_args)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .parse_callbacks(Box::new(MacroTypes))
        .allowlist_file(".*/(rmw|rcutils|rosidl_[a-z_]+)/.*")
        .allowlist_file(".*/constants\\.h")
        .blocklist_var(STATIC_QOS_PROFILES.join("|"))
        .blocklist_item(if aggregates.is_empty() {
            "^$".to_string()
        } else {
            aggregates.join("|")
        })
        // C enums as plain integer constants: a value the headers do not list (a newer ROS)
        // must not be undefined behaviour on the Rust side. C enumerators are global names,
        // so dropping the enum name as prefix cannot collide.
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .wrap_unsafe_ops(true)
        .clang_macro_fallback()
        // Its scratch files (a .pch, a .c) go to OUT_DIR, not into the source tree.
        .clang_macro_fallback_build_dir(&out)
        .layout_tests(true)
        .generate()
        .unwrap_or_else(|e| panic!("bindgen failed on wrapper.h: {e}"))
        .write_to_file(out.join("bindings.rs"))
        .expect("write bindings.rs");

    let mut cpp_args = vec![
        "-x".to_string(),
        "c++".to_string(),
        "-std=c++17".to_string(),
    ];
    cpp_args.extend(include_args);
    bindgen::Builder::default()
        .header("wrapper_cpp.hpp")
        .clang_args(&cpp_args)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        // Only the C++ introspection structs and what is C++-only in them; the C types they
        // point to come from the C bindings (the module does `use super::*`).
        .allowlist_recursively(false)
        .allowlist_type("rosidl_typesupport_introspection_cpp::.*")
        .allowlist_var("rosidl_typesupport_introspection_cpp::.*")
        .allowlist_type("rosidl_runtime_cpp::MessageInitialization")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .derive_default(true)
        .wrap_unsafe_ops(true)
        .layout_tests(true)
        .raw_line("use super::*;")
        .generate()
        .unwrap_or_else(|e| panic!("bindgen failed on wrapper_cpp.hpp: {e}"))
        .write_to_file(out.join("bindings_cpp.rs"))
        .expect("write bindings_cpp.rs");
}
