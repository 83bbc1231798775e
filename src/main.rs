//! The `sidejoin` binary: parses the command line, loads the configuration from the environment,
//! sets up logging and signals, and maps outcomes to exit codes (0 ok, 1 runtime failure,
//! 2 configuration error).

use std::fs::File;
use std::io::{self, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use sidejoin::config::{self, Config, LogFormat, Mode};
use sidejoin::engine::MemoryState;
use sidejoin::metrics::Metrics;
use sidejoin::replay::{self, ReplayOptions};
use sidejoin::runtime::{self, RunMode};

/// mimalloc: the join allocates many small, short-lived objects (rows, keys, output values), where
/// it is markedly cheaper than glibc malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "sidejoin",
    version,
    about = "Joins two Kafka topics with Flink SQL semantics, without the retraction flood"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Consume both topics, join, produce the output topic (the default).
    Run,
    /// Run the join over a JSONL file of records (stdin when no file), without Kafka.
    Replay {
        /// The input file: one record per line.
        file: Option<PathBuf>,
        /// Print the Kafka records the output mode would write instead of changes.
        #[arg(long)]
        records: bool,
    },
    /// Validate the configuration, print the join plan and (with brokers) check the topics.
    Check,
    /// Copy every input record unchanged to the output topic with the same consumer, producer
    /// and commit code as `run`: the baseline sidejoin is benchmarked against.
    #[command(hide = true)]
    Passthrough,
    /// `run` with the join state in memory only: nothing survives a restart. For benchmarks that
    /// compare the RocksDB store with memory.
    #[command(hide = true)]
    RunInMemory,
}

fn load(mode: Mode) -> Result<Config, ExitCode> {
    config::load(std::env::vars(), mode).map_err(|e| {
        eprint!("{e}");
        ExitCode::from(2)
    })
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = io::IsTerminal::is_terminal(&io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn run_replay(file: Option<PathBuf>, records: bool) -> ExitCode {
    let config = match load(Mode::Replay) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let input: Box<dyn io::BufRead> = match &file {
        Some(path) => match File::open(path) {
            Ok(f) => Box::new(BufReader::new(f)),
            Err(e) => {
                eprintln!("cannot open {}: {e}", path.display());
                return ExitCode::from(1);
            }
        },
        None => Box::new(io::stdin().lock()),
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut err = io::stderr().lock();
    match replay::replay(
        &config,
        MemoryState::new(),
        input,
        &mut out,
        &mut err,
        ReplayOptions { records },
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("replay stopped: {e}");
            ExitCode::from(1)
        }
    }
}

fn run_check() -> ExitCode {
    let config = match load(Mode::Check) {
        Ok(c) => c,
        Err(code) => return code,
    };
    print!("configuration is valid\n{}", sidejoin::check::plan(&config));
    print!("{}", sidejoin::check::sql_variables(&config));
    if config.kafka.bootstrap_servers.is_none() {
        println!("brokers: not checked (SIDEJOIN_BOOTSTRAP_SERVERS is not set)");
        return ExitCode::SUCCESS;
    }
    match sidejoin::check::check_brokers(&config) {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err((e, code)) => {
            eprintln!("{e}");
            ExitCode::from(code)
        }
    }
}

/// Cancels `token` on SIGTERM or SIGINT.
async fn signals(token: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: stopping (draining, committing)"),
        _ = int.recv() => tracing::info!("SIGINT: stopping (draining, committing)"),
    }
    token.cancel();
}

fn run_kafka(mode: RunMode) -> ExitCode {
    let config = match load(Mode::Run) {
        Ok(c) => c,
        Err(code) => return code,
    };
    init_logging(config.process.log_format);
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    if mode == RunMode::JoinInMemory {
        tracing::warn!("join state is in memory only: it is lost when the process stops");
    }
    let token = CancellationToken::new();
    runtime.spawn(signals(token.clone()));
    let metrics = Arc::new(Metrics::new(config.process.workers.max(1)));
    match runtime.block_on(runtime::run(&config, mode, metrics, token)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("sidejoin: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Run) {
        Command::Replay { file, records } => run_replay(file, records),
        Command::Check => run_check(),
        Command::Run => run_kafka(RunMode::Join),
        Command::RunInMemory => run_kafka(RunMode::JoinInMemory),
        Command::Passthrough => run_kafka(RunMode::Passthrough),
    }
}
