//! The state at rest of a sidejoin state directory, for the star-join benchmark
//! (`scripts/bench-kafka.sh`, issue 25's state measurement):
//!
//!     state_size DIR
//!         Opens the RocksDB state in DIR (a copy: it is compacted in place), compacts it whole (so
//!         overwritten versions and deletions left by a restore from uncompacted changelog topics
//!         are gone), and prints `live_sst_bytes=B entries=N` then one line per kind of entry:
//!         `entries tag=rows side=left n=…` (the engine's layout tags: rows, pk, ttl, meta,
//!         lookup, local; the side byte L, R, 2… as input names).

use std::collections::BTreeMap;

use rocksdb::{Options, DB};

fn tag_name(tag: u8) -> &'static str {
    match tag {
        1 => "rows",
        2 => "pk",
        3 => "ttl",
        4 => "meta",
        5 => "interval_rows",
        6 => "interval_time",
        7 => "local",
        8 => "lookup",
        _ => "other",
    }
}

fn side_name(byte: u8) -> String {
    match byte {
        b'L' => "left".into(),
        b'R' => "right".into(),
        b'2'..=b'9' => format!("dim{}", byte - b'0'),
        0 => "-".into(),
        b => format!("0x{b:02x}"),
    }
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: state_size DIR (a copy of a state directory: it is compacted in place)");
    let mut options = Options::default();
    options.set_compression_type(rocksdb::DBCompressionType::Lz4);
    let db = DB::open(&options, &dir).unwrap_or_else(|e| panic!("open {dir}: {e}"));
    db.compact_range::<&[u8], &[u8]>(None, None);
    let live = db
        .property_int_value("rocksdb.live-sst-files-size")
        .ok()
        .flatten()
        .unwrap_or(0);
    let mut kinds: BTreeMap<(&str, String), u64> = BTreeMap::new();
    let mut n = 0u64;
    let mut it = db.raw_iterator();
    it.seek_to_first();
    while let Some(key) = it.key() {
        n += 1;
        let (tag, side) = match (key.get(4), key.get(5)) {
            (Some(t), Some(s)) => (tag_name(*t), side_name(*s)),
            _ => ("other", "-".into()),
        };
        *kinds.entry((tag, side)).or_default() += 1;
        it.next();
    }
    println!("live_sst_bytes={live} entries={n}");
    for ((tag, side), count) in kinds {
        println!("entries tag={tag} side={side} n={count}");
    }
}
