//! How a `dovetail` command fails, one exit code per class.
//!
//! Scripts, CI and `dovetail sweep` (which runs each seed as a child process) tell the
//! classes apart by exit code alone, as TigerBeetle's simulator does (`Failure` in its
//! `src/testing/cluster.zig`): a violated invariant is a finding about the controller, an
//! invalid input is a mistake in the scenario or the command line, and a crash or timeout
//! is a finding about the simulator or the run's limits.

/// A failed command. `main` exits with [`Failure::exit_code`].
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// An invariant was violated or a scenario step did not do what it expected; the report
    /// and the reproduce line are already printed. Exit code 1 (also `compare` finding a
    /// new violation).
    #[error("an invariant was violated")]
    Invariant,
    /// The input is invalid: a scenario file (or a manifest it installs) cannot be read or
    /// parsed or contradicts itself, its region is unknown, or a command-line value is out
    /// of range. Exit code 2, as for clap's own usage errors.
    #[error("invalid input: {0:#}")]
    InvalidInput(anyhow::Error),
    /// The run did not finish: a host failed, turmoil's time limit passed, the simulation
    /// panicked or was killed at the sweep's wall-clock timeout, or its output could not be
    /// written. Exit code 3.
    #[error("{0:#}")]
    Crash(anyhow::Error),
}

impl Failure {
    /// Exit code of [`Failure::Invariant`].
    pub const INVARIANT: u8 = 1;
    /// Exit code of [`Failure::InvalidInput`].
    pub const INVALID_INPUT: u8 = 2;
    /// Exit code of [`Failure::Crash`].
    pub const CRASH: u8 = 3;

    /// The process exit code of this class.
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Invariant => Self::INVARIANT,
            Failure::InvalidInput(_) => Self::INVALID_INPUT,
            Failure::Crash(_) => Self::CRASH,
        }
    }

    /// Wraps an error as invalid input.
    pub fn invalid(e: impl Into<anyhow::Error>) -> Self {
        Failure::InvalidInput(e.into())
    }

    /// Wraps an error as a crash.
    pub fn crash(e: impl Into<anyhow::Error>) -> Self {
        Failure::Crash(e.into())
    }
}

/// The message of a caught panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_has_its_own_exit_code() {
        let codes = [
            Failure::Invariant.exit_code(),
            Failure::invalid(anyhow::anyhow!("bad zone")).exit_code(),
            Failure::crash(anyhow::anyhow!("host failed")).exit_code(),
        ];
        assert_eq!(codes, [1, 2, 3]);
    }

    #[test]
    fn a_panic_message_is_recovered() {
        let payload = std::panic::catch_unwind(|| panic!("boom {}", 7)).unwrap_err();
        assert_eq!(panic_message(payload.as_ref()), "boom 7");
    }
}
