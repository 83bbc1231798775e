//! What a script means, as `SIDEJOIN_*` settings: the same variables the environment gives, each
//! with the construct it came from (for `check` and for errors that name both a variable and the
//! SQL). Two constructs that set one variable to different values are an error.

use super::error::{At, Result, SqlError};

/// `Debug` leaves out the value of a variable that may hold a secret (`is_secret_var`).
#[derive(Clone, PartialEq, Eq)]
pub struct Setting {
    /// The full variable name, `SIDEJOIN_JOIN_TYPE`.
    pub var: String,
    pub value: String,
    pub at: At,
    /// The construct that set it, as written, shortened.
    pub construct: String,
}

impl std::fmt::Debug for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = if crate::is_secret_var(&self.var) {
            "<redacted>"
        } else {
            self.value.as_str()
        };
        f.debug_struct("Setting")
            .field("var", &self.var)
            .field("value", &value)
            .field("at", &self.at)
            .field("construct", &self.construct)
            .finish()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub items: Vec<Setting>,
}

impl Settings {
    /// Sets `SIDEJOIN_<name>`; the same value again is fine, another value is an error.
    pub fn set(
        &mut self,
        name: &str,
        value: impl Into<String>,
        at: At,
        construct: impl AsRef<str>,
    ) -> Result<()> {
        let var = format!("SIDEJOIN_{name}");
        let value = value.into();
        let construct = construct.as_ref().to_owned();
        if let Some(prev) = self.items.iter().find(|s| s.var == var) {
            if prev.value != value {
                // Kafka passthrough values may be secrets: named, never shown.
                let (now, before) = if name.starts_with("KAFKA_") {
                    (String::new(), String::new())
                } else {
                    (format!("={value:?}"), format!("={:?}", prev.value))
                };
                return Err(SqlError::new(
                    at,
                    &construct,
                    format!(
                        "means {var}{now}, but `{}` at {} already means {var}{before}; sidejoin has one setting for both",
                        prev.construct, prev.at
                    ),
                ));
            }
            return Ok(());
        }
        self.items.push(Setting {
            var,
            value,
            at,
            construct,
        });
        Ok(())
    }

    pub fn get(&self, var: &str) -> Option<&Setting> {
        self.items.iter().find(|s| s.var == var)
    }
}
