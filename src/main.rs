//! The `sidejoin` binary: parses the command line, loads the configuration from the environment
//! and maps outcomes to exit codes (0 ok, 1 runtime failure, 2 configuration error).

use std::fs::File;
use std::io::{self, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use sidejoin::config::{self, Mode};
use sidejoin::engine::MemoryState;
use sidejoin::replay::{self, ReplayOptions};

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
    /// Validate the configuration and print the join plan without consuming.
    Check,
}

fn load(mode: Mode) -> Result<config::Config, ExitCode> {
    config::load(std::env::vars(), mode).map_err(|e| {
        eprint!("{e}");
        ExitCode::from(2)
    })
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Run) {
        Command::Replay { file, records } => run_replay(file, records),
        Command::Check => match load(Mode::Check) {
            Ok(c) => {
                for w in &c.warnings {
                    eprintln!("warning: {w}");
                }
                println!("configuration is valid");
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
        Command::Run => {
            if let Err(code) = load(Mode::Run) {
                return code;
            }
            eprintln!("sidejoin run: the Kafka runtime is not part of this build yet; use `sidejoin replay`");
            ExitCode::from(1)
        }
    }
}
