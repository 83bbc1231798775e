//! RocksDB tuning that keeps memory bounded as state grows: one LRU block cache holding data,
//! index and filter blocks, the latter partitioned (`SIDEJOIN_STATE_BLOCK_CACHE_MB`), a bounded memtable budget
//! (`SIDEJOIN_STATE_WRITE_BUFFER_MB`), LZ4 compression, and bloom filters on whole keys (point
//! lookups) and on groups (scans): the engine's groups are found by `layout::group_len`, so a
//! scan of a group that is absent from a file skips that file without reading a block.

use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, Cache, DBCompressionType, Options, SliceTransform,
};

use crate::engine::layout;

/// The prefix extractor: a key's engine group.
fn group_prefix(key: &[u8]) -> &[u8] {
    &key[..layout::group_len(key)]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    pub block_cache_mb: usize,
    pub write_buffer_mb: usize,
    /// The cache of decoded hot state in front of RocksDB (`SIDEJOIN_STATE_CACHE_MB`).
    pub cache_mb: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            block_cache_mb: 128,
            write_buffer_mb: 64,
            cache_mb: 128,
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
        o.set_prefix_extractor(SliceTransform::create("sidejoin.group", group_prefix, None));
        o.set_memtable_prefix_bloom_ratio(0.1);
        let mut t = BlockBasedOptions::default();
        let cache = Cache::new_lru_cache(self.block_cache_mb.max(1) << 20);
        t.set_block_cache(&cache);
        t.set_cache_index_and_filter_blocks(true);
        t.set_pin_l0_filter_and_index_blocks_in_cache(true);
        // Partitioned index and filters: a lookup reads one small index and filter partition,
        // not a whole file's (megabytes each, checksummed and evicted again when the block
        // cache is smaller than the state); the small top levels stay pinned, ahead of data.
        t.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
        t.set_partition_filters(true);
        t.set_metadata_block_size(4 << 10);
        t.set_pin_top_level_index_and_filter(true);
        t.set_cache_index_and_filter_blocks_with_high_priority(true);
        t.set_bloom_filter(10.0, false);
        t.set_whole_key_filtering(true);
        // Small blocks: most reads are random point lookups, each decompressing one block.
        t.set_block_size(4 << 10);
        o.set_block_based_table_factory(&t);
        o
    }
}
