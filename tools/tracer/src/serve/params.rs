//! Parameters (`getParameters` / `setParameters`) mapped onto the ROS nodes' parameter
//! services (`rcl_interfaces/srv/ListParameters`, `GetParameters`, `SetParameters`), called
//! through the graph like any service, with requests encoded and responses decoded from the
//! services' own `ros2srv` schemas (no message package needed).
//!
//! A Foxglove parameter name is the node's full name, a dot, the parameter's name
//! (`/talker.use_sim_time`), as foxglove_bridge names them; node names hold no dot, so the
//! first one splits. `getParameters` with no names lists every node's parameters. Values map
//! as rcl_interfaces/ParameterValue's types: bool, integer (a JSON integer), double (a JSON
//! number with a fraction, or any number with `type` `float64`), string, byte array (base64
//! with `type` `byte_array`), and arrays of bool, integer, double (`float64_array`) and string;
//! `null` unsets (NOT_SET).

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{json, Value as Json};

use super::Shared;

const LIST: &str = "rcl_interfaces/srv/ListParameters";
const GET: &str = "rcl_interfaces/srv/GetParameters";
const SET: &str = "rcl_interfaces/srv/SetParameters";

/// rcl_interfaces/msg/ParameterType.
mod kind {
    pub const NOT_SET: u64 = 0;
    pub const BOOL: u64 = 1;
    pub const INTEGER: u64 = 2;
    pub const DOUBLE: u64 = 3;
    pub const STRING: u64 = 4;
    pub const BYTE_ARRAY: u64 = 5;
    pub const BOOL_ARRAY: u64 = 6;
    pub const INTEGER_ARRAY: u64 = 7;
    pub const DOUBLE_ARRAY: u64 = 8;
    pub const STRING_ARRAY: u64 = 9;
}

/// One service call with JSON in and out.
fn call(shared: &Shared, name: &str, type_name: &str, request: &Json) -> Result<Json, String> {
    let (servers, req, resp) = shared
        .hub
        .lock()
        .find_service(name, type_name)
        .ok_or_else(|| format!("no service {name} ({type_name})"))?;
    let bytes = ros2msg::encode(&req, request).map_err(|e| format!("{name}: {e}"))?;
    let payload = shared.caller.call(name, &servers, bytes)?;
    let v = ros2msg::decode(&resp, payload.as_ref()).map_err(|e| format!("{name}: {e}"))?;
    Ok(v.to_json())
}

/// (node, parameter) of a Foxglove name.
fn split(name: &str) -> Option<(&str, &str)> {
    let (node, param) = name.split_once('.')?;
    (node.starts_with('/') && !param.is_empty()).then_some((node, param))
}

/// Every node with parameter services: the full names, from the registry's services.
fn nodes(shared: &Shared) -> Vec<String> {
    let h = shared.hub.lock();
    let mut v: Vec<String> = h
        .service_names(LIST)
        .into_iter()
        .filter_map(|s| s.strip_suffix("/list_parameters").map(str::to_owned))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// `getParameters`: the values found, and what could not be read.
pub fn get(shared: &Shared, names: &[String]) -> (Vec<Json>, Vec<String>) {
    let mut errors = Vec::new();
    let mut wanted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if names.is_empty() {
        for node in nodes(shared) {
            let req = json!({"prefixes": [], "depth": 0});
            match call(shared, &format!("{node}/list_parameters"), LIST, &req) {
                Ok(r) => {
                    let listed = r["result"]["names"].as_array().cloned().unwrap_or_default();
                    let listed = listed.iter().filter_map(|n| n.as_str().map(str::to_owned));
                    wanted.entry(node).or_default().extend(listed);
                }
                Err(e) => errors.push(e),
            }
        }
    }
    for n in names {
        match split(n) {
            Some((node, param)) => wanted.entry(node.into()).or_default().push(param.into()),
            None => errors.push(format!("{n:?} is not /node.parameter")),
        }
    }
    let mut out = Vec::new();
    for (node, params) in wanted {
        let r = match call(
            shared,
            &format!("{node}/get_parameters"),
            GET,
            &json!({"names": params}),
        ) {
            Ok(r) => r,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let values = r["values"].as_array().cloned().unwrap_or_default();
        for (p, v) in params.iter().zip(values) {
            if let Some(mut fv) = to_foxglove(&v) {
                fv["name"] = json!(format!("{node}.{p}"));
                out.push(fv);
            }
        }
    }
    (out, errors)
}

/// `setParameters`: what failed (a node's refusal with its reason, a value that has no ROS
/// type); the names that were set, for the answer.
pub fn set(shared: &Shared, params: &[Json]) -> (Vec<String>, Vec<String>) {
    let mut errors = Vec::new();
    let mut by_node: BTreeMap<String, Vec<(String, Json)>> = BTreeMap::new();
    for p in params {
        let Some(name) = p["name"].as_str() else {
            errors.push(format!("setParameters: a parameter without a name: {p}"));
            continue;
        };
        let Some((node, param)) = split(name) else {
            errors.push(format!("{name:?} is not /node.parameter"));
            continue;
        };
        match to_ros(&p["value"], p["type"].as_str()) {
            Ok(v) => by_node
                .entry(node.into())
                .or_default()
                .push((param.into(), v)),
            Err(e) => errors.push(format!("{name}: {e}")),
        }
    }
    let mut done = Vec::new();
    for (node, ps) in by_node {
        let req = json!({"parameters": ps.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>()});
        match call(shared, &format!("{node}/set_parameters"), SET, &req) {
            Ok(r) => {
                let results = r["results"].as_array().cloned().unwrap_or_default();
                for ((n, _), res) in ps.iter().zip(results) {
                    if res["successful"] == json!(true) {
                        done.push(format!("{node}.{n}"));
                    } else {
                        let why = res["reason"].as_str().unwrap_or("");
                        errors.push(format!("{node}.{n}: refused: {why}"));
                    }
                }
            }
            Err(e) => errors.push(e),
        }
    }
    (done, errors)
}

/// rcl_interfaces/ParameterValue (as decoded JSON) to a Foxglove parameter (without its name);
/// None for NOT_SET.
fn to_foxglove(v: &Json) -> Option<Json> {
    let t = v["type"].as_u64()?;
    Some(match t {
        kind::BOOL => json!({"value": v["bool_value"]}),
        kind::INTEGER => json!({"value": v["integer_value"]}),
        kind::DOUBLE => json!({"value": v["double_value"], "type": "float64"}),
        kind::STRING => json!({"value": v["string_value"]}),
        kind::BYTE_ARRAY => {
            let bytes: Vec<u8> = v["byte_array_value"]
                .as_array()?
                .iter()
                .filter_map(|b| b.as_u64().map(|b| b as u8))
                .collect();
            let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
            json!({"value": b64, "type": "byte_array"})
        }
        kind::BOOL_ARRAY => json!({"value": v["bool_array_value"]}),
        kind::INTEGER_ARRAY => json!({"value": v["integer_array_value"]}),
        kind::DOUBLE_ARRAY => json!({"value": v["double_array_value"], "type": "float64_array"}),
        kind::STRING_ARRAY => json!({"value": v["string_array_value"]}),
        _ => return None,
    })
}

/// A Foxglove value (and its `type` hint) to rcl_interfaces/ParameterValue JSON.
fn to_ros(v: &Json, hint: Option<&str>) -> Result<Json, String> {
    let all = |a: &[Json], f: fn(&Json) -> bool| !a.is_empty() && a.iter().all(f);
    Ok(match (v, hint) {
        (Json::Null, _) => json!({"type": kind::NOT_SET}),
        (Json::Bool(b), None) => json!({"type": kind::BOOL, "bool_value": b}),
        (Json::Number(n), None) if n.is_i64() => json!({"type": kind::INTEGER, "integer_value": n}),
        (Json::Number(n), None | Some("float64")) => {
            json!({"type": kind::DOUBLE, "double_value": n.as_f64()})
        }
        (Json::String(s), Some("byte_array")) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| format!("byte_array value is not base64: {e}"))?;
            json!({"type": kind::BYTE_ARRAY, "byte_array_value": bytes})
        }
        (Json::String(s), None) => json!({"type": kind::STRING, "string_value": s}),
        (Json::Array(a), Some("float64_array")) if a.iter().all(Json::is_number) => {
            let d: Vec<f64> = a.iter().filter_map(Json::as_f64).collect();
            json!({"type": kind::DOUBLE_ARRAY, "double_array_value": d})
        }
        (Json::Array(a), None) if all(a, Json::is_boolean) => {
            json!({"type": kind::BOOL_ARRAY, "bool_array_value": a})
        }
        (Json::Array(a), None) if all(a, Json::is_i64) => {
            json!({"type": kind::INTEGER_ARRAY, "integer_array_value": a})
        }
        (Json::Array(a), None) if all(a, Json::is_number) => {
            let d: Vec<f64> = a.iter().filter_map(Json::as_f64).collect();
            json!({"type": kind::DOUBLE_ARRAY, "double_array_value": d})
        }
        (Json::Array(a), None) if all(a, Json::is_string) => {
            json!({"type": kind::STRING_ARRAY, "string_array_value": a})
        }
        (v, hint) => {
            return Err(format!(
                "{v} (type {}) has no ROS parameter type (an empty or mixed array, an object?)",
                hint.unwrap_or("not given")
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_map_both_ways() {
        let cases = [
            (json!(true), None),
            (json!(-3), None),
            (json!(2.5), Some("float64")),
            (json!("text"), None),
            (json!("AAH/"), Some("byte_array")),
            (json!([true, false]), None),
            (json!([1, 2]), None),
            (json!([1.5, 2.0]), Some("float64_array")),
            (json!(["a", "b"]), None),
        ];
        for (v, hint) in cases {
            let ros = to_ros(&v, hint).unwrap();
            let back = to_foxglove(&ros).unwrap();
            assert_eq!(back["value"], v, "{ros}");
            assert_eq!(back["type"].as_str(), hint, "{ros}");
        }
        // An integral double stays a double when the hint says so, and without one a number
        // with a fraction is a double.
        assert_eq!(to_ros(&json!(3), Some("float64")).unwrap()["type"], 3);
        assert_eq!(to_ros(&json!(0.5), None).unwrap()["type"], 3);
        assert_eq!(to_ros(&Json::Null, None).unwrap()["type"], 0);
        assert!(to_ros(&json!([]), None).is_err());
        assert!(to_ros(&json!([1, "a"]), None).is_err());
        assert!(to_ros(&json!({"a": 1}), None).is_err());
        assert!(to_ros(&json!("%%"), Some("byte_array")).is_err());
        assert_eq!(split("/ns/node.a.b"), Some(("/ns/node", "a.b")));
        assert_eq!(split("node.a"), None);
    }
}
