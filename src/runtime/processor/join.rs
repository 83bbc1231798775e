//! The join processor: Avro records decoded to JSON first (`avro`), then the pipeline (the same
//! as replay's), then its output records, re-encoded as Avro when the output is.

use tokio_util::sync::CancellationToken;

use crate::avro::output::AvroOutput;
use crate::avro::registry::Registry;
use crate::avro::{AvroInput, AvroSetupError};
use crate::change::{Partition, Side};
use crate::config::{Config, OutputFormat};
use crate::engine::state::StateError;
use crate::engine::JoinState;
use crate::format::{DecodeError, Reading};
use crate::metrics::WorkerMetrics;
use crate::pipeline::{ErrorAction, Origin, Pipeline};
use crate::sink::Records;

use super::{InRecord, Processor, RecordError, StartupError};

/// The join of one configuration; its state is lent to each call.
pub struct JoinProcessor {
    pipeline: Pipeline,
    /// Decodes the Avro sides' records to JSON before the pipeline; `Err`: it could not be set
    /// up, reported by `prepare`.
    avro: Result<Option<AvroInput>, AvroSetupError>,
    /// `SIDEJOIN_OUTPUT_FORMAT=avro`: set up by `prepare` (its schemas are registered then).
    avro_out: Option<AvroOutput>,
    /// The configuration, for `prepare`.
    config: Config,
    /// How each input's records are read, in input order.
    readings: Vec<Reading>,
    /// The JSON records of one input, before they are re-encoded as Avro.
    json_out: Records,
    /// Records' keys are checked against their join key (`check_copartitioning`).
    checks_keys: bool,
}

impl JoinProcessor {
    /// The join of `config`, each side read as `readings` says (the plan's).
    pub fn new(config: &Config, readings: Vec<Reading>) -> Self {
        JoinProcessor {
            pipeline: Pipeline::reading(config, &readings),
            // A side read from its repartition topic holds changes, not Avro.
            avro: AvroInput::new(config).map(|a| {
                a.filter(|a| {
                    config
                        .join
                        .inputs()
                        .any(|s| a.is_avro(s) && readings[s.index()] == Reading::Own)
                })
            }),
            readings,
            avro_out: None,
            config: config.clone(),
            json_out: Records::default(),
            checks_keys: false,
        }
    }

    /// Whether `side`'s records are Avro to decode before the pipeline.
    fn is_avro(&self, side: Side) -> bool {
        self.readings[side.index()] == Reading::Own
            && matches!(&self.avro, Ok(Some(a)) if a.is_avro(side))
    }

    /// Appends the output records of the pipeline's last step, as JSON or re-encoded as Avro.
    fn records(&mut self, timestamp: i64, out: &mut Records) -> Result<(), DecodeError> {
        match &mut self.avro_out {
            None => {
                self.pipeline.records(timestamp, out);
                Ok(())
            }
            Some(avro) => {
                self.json_out.clear();
                self.pipeline.records(timestamp, &mut self.json_out);
                avro.convert(&self.json_out, out)
            }
        }
    }

    /// Registers the output schemas (`SIDEJOIN_OUTPUT_FORMAT=avro`); `false` on shutdown.
    fn prepare_output(&mut self, shutdown: &CancellationToken) -> Result<bool, AvroSetupError> {
        let spec = (self.config.kafka.registry.as_ref()).ok_or_else(|| {
            AvroSetupError::Setting("Avro output needs SIDEJOIN_SCHEMA_REGISTRY_URL".into())
        })?;
        let registry = Registry::new(spec)?;
        match AvroOutput::prepare(&self.config, &registry, shutdown)? {
            Some(out) => {
                self.avro_out = Some(out);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

impl<S: JoinState + ?Sized> Processor<S> for JoinProcessor {
    fn prepare(&mut self, shutdown: &CancellationToken) -> Result<bool, StartupError> {
        let ready = match &self.avro {
            Ok(Some(avro)) => avro
                .wait_for_registry(shutdown)
                .map_err(StartupError::Registry)?,
            Ok(None) => true,
            Err(e) => return Err(StartupError::Registry(e.clone())),
        };
        if !ready || self.config.output.format != OutputFormat::Avro {
            return Ok(ready);
        }
        self.prepare_output(shutdown)
            .map_err(StartupError::Registry)
    }

    fn process(
        &mut self,
        state: &mut S,
        rec: &InRecord<'_>,
        now: i64,
        out: &mut Records,
    ) -> Result<(), RecordError> {
        let origin = Origin {
            side: rec.side,
            partition: rec.partition,
            timestamp: rec.timestamp,
            processing_time: now,
        };
        let avro_side = self.is_avro(rec.side);
        let error = match &mut self.avro {
            Ok(Some(avro)) if avro_side => match avro.decode(rec.side, rec.key, rec.value) {
                Ok((key, value)) => self.pipeline.process(state, origin, key, value)?,
                Err(e) => self.pipeline.process_decoded(state, origin, Err(e))?,
            },
            _ => self.pipeline.process(state, origin, rec.key, rec.value)?,
        };
        let encoded = self.records(rec.timestamp, out);
        match (error, encoded) {
            (Some(e), _) | (None, Err(e)) => Err(e.into()),
            (None, Ok(())) => Ok(()),
        }
    }

    fn dispatch(&mut self) -> ErrorAction {
        self.pipeline.dispatch()
    }

    fn check_copartitioning(&mut self) -> bool {
        self.pipeline.check_copartitioning(&self.config);
        self.checks_keys = true;
        true
    }

    fn take_violation(&mut self) -> Option<String> {
        self.pipeline.take_violation()
    }

    fn misfit(&mut self, side: Side, key: Option<&[u8]>, value: Option<&[u8]>) -> Option<String> {
        let avro_side = self.is_avro(side);
        match &mut self.avro {
            Ok(Some(avro)) if avro_side => match avro.decode(side, key, value) {
                Ok((key, value)) => self.pipeline.misfit(side, key, value),
                _ => None,
            },
            _ => self.pipeline.misfit(side, key, value),
        }
    }

    fn tick(&mut self, state: &mut S, now: i64, out: &mut Records) -> Result<(), StateError> {
        self.pipeline.tick(state, now)?;
        if let Err(e) = self.records(now, out) {
            // No input record to dead-letter: what processing time released is lost, loudly.
            tracing::error!("output records released by processing time were not written: {e}");
        }
        Ok(())
    }

    fn assigned(
        &mut self,
        state: &mut S,
        tasks: &[Partition],
        new: &[Partition],
        now: i64,
    ) -> Result<(), StateError> {
        for p in new {
            self.pipeline.restore_partition(state, *p, now)?;
        }
        self.pipeline.set_partitions(tasks, now);
        Ok(())
    }

    fn revoked(&mut self, state: &mut S, tasks: &[Partition]) {
        for p in tasks {
            self.pipeline.release_partition(state, *p);
        }
    }

    fn reset(&mut self) {
        let stats = std::mem::take(self.pipeline.stats_mut());
        self.pipeline = Pipeline::reading(&self.config, &self.readings);
        *self.pipeline.stats_mut() = stats;
        if self.checks_keys {
            self.pipeline.check_copartitioning(&self.config);
        }
        self.json_out.clear();
    }

    fn checkpoint(&mut self, state: &mut S) {
        self.pipeline.checkpoint(state);
    }

    fn records_in(&self) -> u64 {
        self.pipeline.stats().records_in.iter().sum()
    }

    fn publish(&self, metrics: &WorkerMetrics) {
        metrics.observe_stats(self.pipeline.stats());
        for side in self.config.join.inputs() {
            if let Some(w) = self.pipeline.engine().watermark(side) {
                metrics.set_watermark(side, w);
            }
        }
    }
}
