//! A service's `ros2srv` definition, as rmw_tracer puts it in a service's `:schema`: the
//! `.srv` text (the request's fields, a line `---`, the response's fields), then each type they
//! use as a `ros2msg` section (a line of `=`, `MSG: pkg/msg/Dep`, its `.msg` text).
//! [`split_service`] gives the request's and the response's own `ros2msg` definitions, each
//! with every dependency section (one the message does not use is harmless to any reader).

use crate::SchemaError;

/// (request definition, response definition) of a `ros2srv` text.
pub fn split_service(text: &str) -> Result<(String, String), SchemaError> {
    let lines: Vec<&str> = text.lines().collect();
    let is_separator = |l: &str| {
        let l = l.trim();
        l.len() >= 3 && l.bytes().all(|b| b == b'=')
    };
    let deps_at = lines
        .iter()
        .position(|l| is_separator(l))
        .unwrap_or(lines.len());
    let srv = &lines[..deps_at];
    let mut splits = srv
        .iter()
        .enumerate()
        .filter(|(_, l)| l.split('#').next().unwrap_or("").trim() == "---")
        .map(|(i, _)| i);
    let Some(at) = splits.next() else {
        return Err(SchemaError {
            line: 0,
            reason: "a service definition without the `---` between request and response".into(),
        });
    };
    if let Some(extra) = splits.next() {
        return Err(SchemaError {
            line: extra + 1,
            reason: "a second `---` in a service definition (an action?)".into(),
        });
    }
    let mut deps = String::new();
    for l in &lines[deps_at..] {
        deps.push_str(l);
        deps.push('\n');
    }
    let part = |ls: &[&str]| {
        let mut s = String::new();
        for l in ls {
            s.push_str(l);
            s.push('\n');
        }
        s.push_str(&deps);
        s
    };
    Ok((part(&srv[..at]), part(&srv[at + 1..])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode, encode, Schema};
    use serde_json::json;

    #[test]
    fn request_and_response_parse_on_their_own() {
        let text = format!(
            "# a comment\nstring[] names\n---\nParameterValue[] values\n{b}\nMSG: rcl_interfaces/msg/ParameterValue\nuint8 type\nint64 integer_value\n",
            b = "=".repeat(80)
        );
        let (req, resp) = split_service(&text).unwrap();
        let req = Schema::parse("rcl_interfaces/srv/GetParameters_Request", &req).unwrap();
        let resp = Schema::parse("rcl_interfaces/srv/GetParameters_Response", &resp).unwrap();
        let v = json!({"values": [{"type": 2, "integer_value": -5}]});
        assert_eq!(
            decode(&resp, &encode(&resp, &v).unwrap())
                .unwrap()
                .to_json(),
            v
        );
        let v = json!({"names": ["a", "b"]});
        assert_eq!(
            decode(&req, &encode(&req, &v).unwrap()).unwrap().to_json(),
            v
        );
    }

    #[test]
    fn empty_halves_and_errors() {
        let (req, resp) = split_service("---\nbool ok\n").unwrap();
        assert_eq!(req, "");
        assert_eq!(resp, "bool ok\n");
        assert!(split_service("int32 a\n")
            .unwrap_err()
            .reason
            .contains("---"));
        assert_eq!(split_service("a\n---\nb\n---\nc\n").unwrap_err().line, 4);
    }
}
