//! Whether security is on and where the enclave is: what rcl passes rmw in its init options,
//! or what a program that is not on rcl reads from the same environment variables.

use std::path::{Path, PathBuf};

use libtracer_core::link::quic::NetLog;

use super::{SecurityError, SecurityResult};

/// What rcl passed in the init options' security options (or [`SecurityOptions::from_env`]).
#[derive(Clone, Debug, Default)]
pub struct SecurityOptions {
    pub enforce: bool,
    /// The enclave's directory, if rcl found one.
    pub root: Option<String>,
}

/// The enclave a program that does not name one runs as (rcl's default, `--enclave` unset).
pub const DEFAULT_ENCLAVE: &str = "/";

impl SecurityOptions {
    /// The options rcl would pass for `enclave` (rcl's `rcl_get_security_options_from_environment`
    /// and `rcl_get_secure_root`): off unless `ROS_SECURITY_ENABLE=true`; enforced when
    /// `ROS_SECURITY_STRATEGY=Enforce`; the root `<ROS_SECURITY_KEYSTORE>/enclaves/<enclave>`,
    /// the enclave being `ROS_SECURITY_ENCLAVE_OVERRIDE` when set, when that directory exists.
    /// Enforced with no such directory is an error naming it, as rcl's; permissive, a warning
    /// and no security.
    pub fn from_env(enclave: &str, log: Option<&NetLog>) -> SecurityResult<SecurityOptions> {
        SecurityOptions::from_vars(enclave, |n| std::env::var(n).ok(), log)
    }

    /// [`SecurityOptions::from_env`] with the variables from `get`.
    pub fn from_vars(
        enclave: &str,
        get: impl Fn(&str) -> Option<String>,
        log: Option<&NetLog>,
    ) -> SecurityResult<SecurityOptions> {
        let var = |n: &str| get(n).filter(|v| !v.is_empty());
        if var("ROS_SECURITY_ENABLE").as_deref() != Some("true") {
            return Ok(SecurityOptions::default());
        }
        let enforce = var("ROS_SECURITY_STRATEGY").as_deref() == Some("Enforce");
        let enclave = var("ROS_SECURITY_ENCLAVE_OVERRIDE").unwrap_or_else(|| enclave.to_owned());
        let root = match var("ROS_SECURITY_KEYSTORE") {
            None => Err("ROS_SECURITY_KEYSTORE is not set".to_owned()),
            Some(ks) => {
                let dir = enclave_dir(Path::new(&ks), &enclave);
                if dir.is_dir() {
                    Ok(dir)
                } else {
                    Err(format!(
                        "no enclave `{enclave}` in the keystore {ks} ({} is not a directory)",
                        dir.display()
                    ))
                }
            }
        };
        match root {
            Ok(dir) => Ok(SecurityOptions {
                enforce,
                root: Some(dir.to_string_lossy().into_owned()),
            }),
            Err(why) if enforce => Err(SecurityError::Setup(format!(
                "security is enforced (ROS_SECURITY_STRATEGY=Enforce) but {why}"
            ))),
            Err(why) => {
                if let Some(log) = log {
                    log(&format!(
                        "security: {why}; running without security (ROS_SECURITY_STRATEGY is not Enforce)"
                    ));
                }
                Ok(SecurityOptions::default())
            }
        }
    }
}

/// `<keystore>/enclaves/<enclave>` (the enclave an absolute ROS name, `/` the keystore's own).
fn enclave_dir(keystore: &Path, enclave: &str) -> PathBuf {
    let mut dir = keystore.join("enclaves");
    for part in enclave.split('/').filter(|p| !p.is_empty()) {
        dir.push(part);
    }
    dir
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    fn with(
        vars: &[(&str, &str)],
        enclave: &str,
    ) -> (SecurityResult<SecurityOptions>, Vec<String>) {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let said = Arc::new(Mutex::new(Vec::new()));
        let s = said.clone();
        let log: NetLog = Arc::new(move |m: &str| s.lock().unwrap().push(m.to_owned()));
        let got = SecurityOptions::from_vars(enclave, |n| vars.get(n).cloned(), Some(&log));
        let said = said.lock().unwrap().clone();
        (got, said)
    }

    #[test]
    fn the_environment_is_read_with_rcls_rules() {
        let ks = std::env::temp_dir().join(format!("sec-opts-{}", std::process::id()));
        std::fs::create_dir_all(ks.join("enclaves/robot/arm")).unwrap();
        std::fs::create_dir_all(ks.join("enclaves")).unwrap();
        let k = ks.to_str().unwrap();
        // Not enabled: nothing, whatever else is set.
        let (o, said) = with(&[("ROS_SECURITY_KEYSTORE", k)], "/robot/arm");
        let o = o.unwrap();
        assert!(!o.enforce && o.root.is_none() && said.is_empty());
        // Enabled: the enclave's directory; Enforce only when it says so.
        let on = [
            ("ROS_SECURITY_ENABLE", "true"),
            ("ROS_SECURITY_KEYSTORE", k),
        ];
        let o = with(&on, "/robot/arm").0.unwrap();
        assert_eq!(
            o.root.as_deref(),
            Some(ks.join("enclaves/robot/arm").to_str().unwrap())
        );
        assert!(!o.enforce);
        // The override wins over the program's enclave; `/` is the keystore's own directory.
        let over = [on[0], on[1], ("ROS_SECURITY_ENCLAVE_OVERRIDE", "/")];
        let o = with(&over, "/robot/arm").0.unwrap();
        assert_eq!(
            o.root.as_deref(),
            Some(ks.join("enclaves").to_str().unwrap())
        );
        // No such enclave: permissive warns and runs without; Enforce fails, naming it.
        let (o, said) = with(&on, "/robot/leg");
        assert!(o.unwrap().root.is_none());
        assert!(
            said.len() == 1 && said[0].contains("no enclave `/robot/leg`"),
            "{said:?}"
        );
        let enforce = [on[0], on[1], ("ROS_SECURITY_STRATEGY", "Enforce")];
        let e = with(&enforce, "/robot/leg").0.unwrap_err().to_string();
        assert!(e.contains("Enforce") && e.contains("/robot/leg"), "{e}");
        let e = with(&enforce[..1], "/").0;
        assert!(e.is_ok(), "permissive by default");
        let e = with(&[on[0], enforce[2]], "/").0.unwrap_err().to_string();
        assert!(e.contains("ROS_SECURITY_KEYSTORE is not set"), "{e}");
        std::fs::remove_dir_all(&ks).unwrap();
    }
}
