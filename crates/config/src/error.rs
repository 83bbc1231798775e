//! Configuration errors: each names the variable, the bad value and what was expected.

use std::fmt;

/// One configuration problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable at fault, e.g. `SIDEJOIN_JOIN_TYPE`.
    pub var: String,
    /// Its value as given, when it was given (secrets are never copied here).
    pub value: Option<String>,
    /// What is wrong and what is expected.
    pub message: String,
}

impl ConfigError {
    pub fn new(var: impl Into<String>, value: Option<&str>, message: impl Into<String>) -> Self {
        ConfigError {
            var: var.into(),
            value: value.map(str::to_owned),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{}={:?}: {}", self.var, v, self.message),
            None => write!(f, "{}: {}", self.var, self.message),
        }
    }
}

/// Every problem found in one configuration, reported together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        writeln!(
            f,
            "invalid configuration ({n} problem{}):",
            if n == 1 { "" } else { "s" }
        )?;
        for e in &self.0 {
            writeln!(f, "  - {e}")?;
        }
        Ok(())
    }
}

/// Collects problems while a configuration is validated.
#[derive(Debug, Default)]
pub(crate) struct Problems(Vec<ConfigError>);

impl Problems {
    pub(crate) fn add(
        &mut self,
        var: impl Into<String>,
        value: Option<&str>,
        message: impl Into<String>,
    ) {
        self.0.push(ConfigError::new(var, value, message));
    }

    /// Keeps the value of a check, recording its error if it failed.
    pub(crate) fn take<T>(&mut self, r: Result<T, ConfigError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.0.push(e);
                None
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn into_result<T>(self, value: impl FnOnce() -> T) -> Result<T, ConfigErrors> {
        if self.0.is_empty() {
            Ok(value())
        } else {
            Err(ConfigErrors(self.0))
        }
    }
}
