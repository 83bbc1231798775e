//! RocksDB stores for the generic suites. Opening a database per property case would dominate
//! the run, and clearing one with range deletions slows every later read, so each test thread
//! keeps one database and every "new" store is a fresh namespace in it: a number no other store
//! of the thread used, written into the high 16 bits of the partition that starts every engine
//! group (the suites use small partitions), so keys keep the engine's layout, which the store's
//! group blooms read. Stores flush by themselves every few writes, so reads exercise both the
//! pending overlay and the database.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use sidejoin::engine::state::{JoinState, StateError, StateValue};
use sidejoin::store::{Checkpointed, RocksState, StoreOptions};

struct Shared {
    // Declared first: dropped (closed) before its directory is removed.
    state: Rc<RefCell<RocksState>>,
    _dir: tempfile::TempDir,
}

thread_local! {
    static SHARED: RefCell<Option<Shared>> = const { RefCell::new(None) };
    static NAMESPACE: Cell<u32> = const { Cell::new(0) };
}

/// A store of its own inside this thread's RocksDB database.
pub(crate) struct TempRocks {
    state: Rc<RefCell<RocksState>>,
    ns: u32,
    group: Vec<u8>,
}

impl TempRocks {
    pub(crate) fn new() -> Self {
        let state = SHARED.with(|s| {
            let mut s = s.borrow_mut();
            let shared = s.get_or_insert_with(|| {
                let dir = tempfile::tempdir().expect("temp dir");
                let options = StoreOptions {
                    block_cache_mb: 16,
                    cache_mb: 1,
                    write_buffer_mb: 8,
                };
                let state = RocksState::open(dir.path(), &options)
                    .expect("open RocksDB")
                    .with_auto_flush(8);
                Shared {
                    state: Rc::new(RefCell::new(state)),
                    _dir: dir,
                }
            });
            shared.state.clone()
        });
        let ns = NAMESPACE.with(|n| {
            n.set(n.get() + 1);
            n.get()
        });
        assert!(
            ns < 1 << 16,
            "more than 65,535 RocksDB stores in one test thread"
        );
        TempRocks {
            state,
            ns: ns << 16,
            group: Vec::with_capacity(64),
        }
    }

    /// Makes every write so far durable (reads then come from the database, not the overlay).
    pub(crate) fn flush(&mut self) -> Result<(), StateError> {
        self.state.borrow_mut().flush()
    }

    fn group(&mut self, group: &[u8]) -> Vec<u8> {
        self.group.clear();
        self.group.extend_from_slice(group);
        let partition = u32::from_be_bytes(group[..4].try_into().expect("a partition"));
        assert!(partition < 1 << 16, "suite partitions are small");
        self.group[..4].copy_from_slice(&(self.ns | partition).to_be_bytes());
        self.group.clone()
    }
}

impl JoinState for TempRocks {
    fn get(&mut self, group: &[u8], item: &[u8]) -> Result<Option<StateValue>, StateError> {
        let g = self.group(group);
        self.state.borrow_mut().get(&g, item)
    }
    fn put(&mut self, group: &[u8], item: &[u8], value: StateValue) {
        let g = self.group(group);
        self.state.borrow_mut().put(&g, item, value)
    }
    fn delete(&mut self, group: &[u8], item: &[u8]) {
        let g = self.group(group);
        self.state.borrow_mut().delete(&g, item)
    }
    fn scan_from(
        &mut self,
        group: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    ) -> Result<(), StateError> {
        let g = self.group(group);
        self.state.borrow_mut().scan_from(&g, from, visit)
    }
    fn release_partition(&mut self, _partition: i32) {
        // Namespaced stores are never released by the suites; the database is shared.
    }
}

/// Counts the items stores hand to `scan` visitors (to show how much work a step does).
pub(crate) struct Counting<S> {
    pub inner: S,
    pub visited: u64,
}

impl<S: JoinState> JoinState for Counting<S> {
    fn get(&mut self, group: &[u8], item: &[u8]) -> Result<Option<StateValue>, StateError> {
        self.inner.get(group, item)
    }
    fn put(&mut self, group: &[u8], item: &[u8], value: StateValue) {
        self.inner.put(group, item, value)
    }
    fn delete(&mut self, group: &[u8], item: &[u8]) {
        self.inner.delete(group, item)
    }
    fn scan_from(
        &mut self,
        group: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    ) -> Result<(), StateError> {
        let visited = &mut self.visited;
        self.inner.scan_from(group, from, &mut |k, v| {
            *visited += 1;
            visit(k, v)
        })
    }
    fn release_partition(&mut self, partition: i32) {
        self.inner.release_partition(partition)
    }
}
