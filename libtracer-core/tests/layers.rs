//! The core's modules form layers (docs/architecture.md, "Inside libtracer-core: layers"): a
//! module imports only modules of a lower layer, never one of its own layer or above, so the
//! import graph has no cycle. Read from the sources, so a new
//! `use crate::...` that points upwards (the import circle issue 26 removed) fails here, with
//! the file and the name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Top-level modules of `src/`, by layer, lowest first. A module not listed fails the test:
/// a new module gets its place here and in docs/architecture.md.
const LAYERS: &[&[&str]] = &[
    &["payload"],
    &["wire"],
    &["error"],
    &["path", "acl", "ready", "wait_tuning"],
    &["sample", "link"],
    &["ring", "structure"],
    &["vertex"],
    &["tree"],
    &["peers"],
    &["state"],
    &["net"],
    &["graph"],
];

/// Names the crate root re-exports from inside a module (`pub use vertex::edge` ...): an import
/// through them is an import of the module that holds them.
const NESTED: &[(&str, &str)] = &[("edge", "vertex"), ("buffer", "payload")];

fn layer_of(module: &str) -> Option<usize> {
    let module = NESTED
        .iter()
        .find(|(n, _)| *n == module)
        .map_or(module, |(_, m)| m);
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every `crate::<name>` in `src`, comments included (a doc link upwards is a smell too).
fn crate_refs(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.push(name);
        }
    }
    out
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" {
            continue;
        }
        let own = layer_of(&module)
            .unwrap_or_else(|| panic!("{module} (src/{first}) has no layer in LAYERS"));
        for name in crate_refs(&std::fs::read_to_string(f).unwrap()) {
            let Some(theirs) = layer_of(&name) else {
                continue;
            };
            if theirs >= own && name != module {
                wrong
                    .entry(rel.display().to_string())
                    .or_insert_with(Vec::new)
                    .push(name);
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "modules importing their own layer or one above: {wrong:?}"
    );
}

#[test]
fn every_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for e in std::fs::read_dir(&src).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        let module = name.trim_end_matches(".rs");
        if module == "lib" {
            continue;
        }
        assert!(layer_of(module).is_some(), "src/{name} has no layer");
    }
}
