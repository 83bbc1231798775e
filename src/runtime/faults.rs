//! Faults tests inject (`SJ_TEST_FAULT`, outside the configuration), to prove the code that
//! must catch them does: read once per worker or router at its start, and only in builds with
//! the `fault-hooks` feature (the tests'); other builds ignore `SJ_TEST_FAULT`.

/// A fault `SJ_TEST_FAULT` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "fault-hooks"), allow(dead_code))]
pub(super) enum Fault {
    None,
    /// The kill tests prove they catch it: the input offsets written into the state are those
    /// of the previous checkpoint (`offsets_late`).
    OffsetsLate,
    /// The first checkpoint never ends (`hold_checkpoint`): the watchdog must see it.
    HoldCheckpoint,
    /// The second checkpoint's transaction never commits (`hold_commit`): processing goes on
    /// up to the in-flight bound (`durable::in_flight`).
    HoldCommit,
    /// Processing a record whose value holds `POISON_MARKER` panics once the processor (or the
    /// router) has handled it (`panic_on_marker`): what it did must be dropped.
    PanicOnMarker,
}

/// What makes a record panic under `Fault::PanicOnMarker`.
const POISON_MARKER: &[u8] = b"SJ_TEST_POISON";

/// The fault `SJ_TEST_FAULT` asks for.
#[cfg(feature = "fault-hooks")]
pub(super) fn fault() -> Fault {
    match std::env::var("SJ_TEST_FAULT").as_deref() {
        Ok("offsets_late") => Fault::OffsetsLate,
        Ok("hold_checkpoint") => Fault::HoldCheckpoint,
        Ok("hold_commit") => Fault::HoldCommit,
        Ok("panic_on_marker") => Fault::PanicOnMarker,
        _ => Fault::None,
    }
}

/// Builds without the `fault-hooks` feature inject nothing.
#[cfg(not(feature = "fault-hooks"))]
pub(super) fn fault() -> Fault {
    Fault::None
}

impl Fault {
    /// Panics when this is `PanicOnMarker` and `value` holds the marker.
    pub(super) fn panic_on_marker(self, value: Option<&[u8]>) {
        let marked = |v: &[u8]| (v.windows(POISON_MARKER.len())).any(|w| w == POISON_MARKER);
        if self == Fault::PanicOnMarker && value.is_some_and(marked) {
            panic!("SJ_TEST_FAULT=panic_on_marker: the record holds the marker");
        }
    }
}

#[cfg(all(test, not(feature = "fault-hooks")))]
mod tests {
    use super::*;

    #[test]
    fn a_build_without_fault_hooks_ignores_sj_test_fault() {
        for name in [
            "offsets_late",
            "hold_checkpoint",
            "hold_commit",
            "panic_on_marker",
        ] {
            std::env::set_var("SJ_TEST_FAULT", name);
            assert_eq!(fault(), Fault::None);
        }
        std::env::remove_var("SJ_TEST_FAULT");
    }
}
