//! Small helpers over roxmltree for the DDS and SROS2 documents: child elements by name,
//! trimmed text, booleans as DDS writes them, and escaping for the documents we write.

use roxmltree::{Document, Node, ParsingOptions};

use crate::Error;

/// Largest document parsed.
pub const MAX_DOCUMENT: usize = 4 << 20;

pub fn parse(text: &str) -> Result<Document<'_>, Error> {
    if text.len() > MAX_DOCUMENT {
        return Err(Error::Xml(format!(
            "{} bytes (at most {MAX_DOCUMENT})",
            text.len()
        )));
    }
    // No DTDs: the documents never need one, and entity expansion is how XML bombs work.
    let opts = ParsingOptions {
        allow_dtd: false,
        ..ParsingOptions::default()
    };
    Document::parse_with_options(text, opts).map_err(|e| Error::Xml(e.to_string()))
}

pub fn children<'a, 'i>(n: Node<'a, 'i>, name: &'a str) -> impl Iterator<Item = Node<'a, 'i>> {
    n.children()
        .filter(move |c| c.is_element() && c.tag_name().name() == name)
}

pub fn child<'a, 'i>(n: Node<'a, 'i>, name: &'a str) -> Option<Node<'a, 'i>> {
    children(n, name).next()
}

pub fn text(n: Node<'_, '_>) -> String {
    n.text().unwrap_or_default().trim().to_owned()
}

pub fn child_text(n: Node<'_, '_>, name: &str) -> Option<String> {
    child(n, name).map(text)
}

/// `true`/`false` (also `1`/`0`), as DDS XML writes booleans.
pub fn boolean(n: Node<'_, '_>, name: &str, default: bool) -> Result<bool, Error> {
    match child_text(n, name).as_deref() {
        None => Ok(default),
        Some("true" | "TRUE" | "1") => Ok(true),
        Some("false" | "FALSE" | "0") => Ok(false),
        Some(v) => Err(Error::Invalid(format!("<{name}>: {v:?} is not a boolean"))),
    }
}

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `<domains>`: `<id>` and `<id_range><min/><max/></id_range>` entries as inclusive ranges.
pub fn domains(n: Node<'_, '_>) -> Result<Vec<(u32, u32)>, Error> {
    let num = |s: String| -> Result<u32, Error> {
        s.parse()
            .map_err(|_| Error::Invalid(format!("domain id {s:?} is not a number")))
    };
    let mut out = Vec::new();
    for c in n.children().filter(|c| c.is_element()) {
        match c.tag_name().name() {
            "id" => {
                let d = num(text(c))?;
                out.push((d, d));
            }
            "id_range" => {
                let lo = child_text(c, "min").map(num).transpose()?.unwrap_or(0);
                let hi = child_text(c, "max")
                    .map(num)
                    .transpose()?
                    .unwrap_or(u32::MAX);
                out.push((lo, hi));
            }
            _ => {}
        }
    }
    Ok(out)
}
