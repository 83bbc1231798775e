//! The star-join differential against Flink 2.2 SQL (issue 25; run by
//! `scripts/flink-star-diff.sh`, which also runs Flink's side, `scripts/flink/SidejoinStarDiff.java`):
//!
//!     star_differential generate SEED CASES TOPOLOGIES FILE
//!         Writes CASES random cases over TOPOLOGIES random chains of 3 and 4 inputs to the cases
//!         file FILE (its format: scripts/flink/SidejoinStarDiff.java) and prints what they cover.
//!
//!     star_differential compare FILE FLINK_OUTPUT
//!         Runs every case of FILE through sidejoin's engine (`engine`), materialises its output
//!         and compares it with Flink's materialised table of that case (FLINK_OUTPUT); prints
//!         every differing case and `N cases, M differ`; exits 1 when any differs.
//!
//! Not part of CI (it needs a JVM); it is compiled there with the other examples.

mod cases;
mod compare;
mod engine;
mod generate;

use std::process::ExitCode;

use cases::{ChangeKind, Topology};
use generate::Rng;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["generate", seed, cases, topologies, file] => {
            generate_file(seed, cases, topologies, file).map(|()| ExitCode::SUCCESS)
        }
        ["compare", file, flink] => compare_files(file, flink),
        _ => Err("usage: star_differential generate SEED CASES TOPOLOGIES FILE | compare FILE FLINK_OUTPUT".to_owned()),
    };
    result.unwrap_or_else(|e| {
        eprintln!("star_differential: {e}");
        ExitCode::from(2)
    })
}

fn number<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("not a number: {s}"))
}

fn generate_file(seed: &str, cases: &str, topologies: &str, file: &str) -> Result<(), String> {
    let (seed, count, t): (u64, u64, usize) = (number(seed)?, number(cases)?, number(topologies)?);
    if t == 0 {
        return Err("TOPOLOGIES must be at least 1".to_owned());
    }
    let mut rng = Rng::new(seed);
    let topologies = generate::topologies(&mut rng, t);
    let cases: Vec<_> = (0..count)
        .map(|n| generate::case(&mut rng, &topologies[n as usize % t], n))
        .collect();
    std::fs::write(file, cases::write(&topologies, &cases)).map_err(|e| format!("{file}: {e}"))?;
    for t in &topologies {
        println!("  {:<2} {}", t.number, t.sql());
    }
    // Changes by kind per input position (an update counted once, at its -U).
    let mut by_input = [[0usize; 3]; 4];
    for op in cases.iter().flat_map(|c| &c.ops) {
        let kind = match op.kind {
            ChangeKind::Insert => 0,
            ChangeKind::UpdateBefore => 1,
            ChangeKind::Delete => 2,
            ChangeKind::UpdateAfter => continue,
        };
        by_input[op.source][kind] += 1;
    }
    let inputs = ["fact", "dim1", "dim2", "dim3"];
    for (name, [i, u, d]) in inputs.iter().zip(by_input) {
        println!("  {name}: {i} inserts, {u} updates, {d} deletes");
    }
    println!("seed {seed}: {count} cases over {t} topologies written to {file}");
    Ok(())
}

fn compare_files(file: &str, flink: &str) -> Result<ExitCode, String> {
    let read = |f: &str| std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"));
    let (topologies, cases) = cases::parse(&read(file)?)?;
    let flink = compare::read_flink(&read(flink)?)?;
    let specs: Vec<_> = topologies.iter().map(engine::spec).collect();
    let (mut differ, mut rows, mut non_empty) = (0, 0, 0);
    let empty = compare::Materialised::new();
    for c in &cases {
        let t: &Topology = &topologies[c.topology];
        let theirs = flink.get(&c.number).unwrap_or(&empty);
        let mine = engine::run(&specs[c.topology], c);
        rows += theirs.values().sum::<i64>();
        non_empty += usize::from(!theirs.is_empty());
        if mine.as_ref() != Ok(theirs) {
            differ += 1;
            print!("{}", compare::report(t, c, &mine, theirs));
        }
    }
    println!(
        "{} cases, {differ} differ ({rows} chained rows in Flink's final tables, {non_empty} of them not empty)",
        cases.len()
    );
    Ok(if differ == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
