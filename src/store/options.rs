//! RocksDB tuning that keeps memory bounded as state grows: one LRU block cache holding data,
//! index and filter blocks (`SIDEJOIN_STATE_BLOCK_CACHE_MB`), a bounded memtable budget
//! (`SIDEJOIN_STATE_WRITE_BUFFER_MB`), bloom filters for point lookups, LZ4 compression.

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    pub block_cache_mb: usize,
    pub write_buffer_mb: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            block_cache_mb: 256,
            write_buffer_mb: 64,
        }
    }
}

impl StoreOptions {
    pub fn rocksdb(&self) -> Options {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_compression_type(DBCompressionType::Lz4);
        o.set_write_buffer_size(self.write_buffer_mb.max(1) << 20);
        o.set_max_write_buffer_number(3);
        o.set_max_background_jobs(2);
        o.set_level_compaction_dynamic_level_bytes(true);
        let mut t = BlockBasedOptions::default();
        let cache = Cache::new_lru_cache(self.block_cache_mb.max(1) << 20);
        t.set_block_cache(&cache);
        t.set_cache_index_and_filter_blocks(true);
        t.set_pin_l0_filter_and_index_blocks_in_cache(true);
        t.set_bloom_filter(10.0, false);
        t.set_block_size(16 << 10);
        o.set_block_based_table_factory(&t);
        o
    }
}
