//! Avro end to end on the real broker and the real schema registry (`scripts/test.sh` starts
//! both): Debezium-Avro CDC on both sides with a schema change mid-topic gives the records
//! `sidejoin replay` gives for the same records as JSON; logical types reach the output as the
//! docs/src/operations/avro.md says (expectations written by hand); malformed records all land in the DLQ.

use std::time::Duration;

use crate::common::avro::{self, Writer};
use crate::common::kafka::{self, Sidejoin};
use crate::common::upsert::replay_records;
use serde_json::{json, Value};

pub(crate) const WAIT: Duration = Duration::from_secs(60);

pub(crate) fn env_of(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A Debezium envelope schema around the row record `row`.
pub(crate) fn envelope(namespace: &str, row: Value) -> Value {
    json!({
        "type": "record", "name": "Envelope", "namespace": namespace,
        "fields": [
            {"name": "before", "type": ["null", row], "default": null},
            {"name": "after", "type": ["null", "Value"], "default": null},
            {"name": "op", "type": "string"},
            {"name": "ts_ms", "type": ["null", "long"], "default": null}
        ]
    })
}

pub(crate) fn users_schema() -> Value {
    envelope(
        "db.users",
        json!({"type": "record", "name": "Value", "fields": [
            {"name": "id", "type": "int"},
            {"name": "name", "type": "string"}
        ]}),
    )
}

/// Version 1 of the scores rows, and version 2 with `note` added (default null).
pub(crate) fn scores_schema(v2: bool) -> Value {
    let mut fields = vec![
        json!({"name": "sid", "type": "long"}),
        json!({"name": "user_id", "type": ["null", "int"], "default": null}),
        json!({"name": "score", "type": "double"}),
    ];
    if v2 {
        fields.push(json!({"name": "note", "type": ["null", "string"], "default": null}));
    }
    envelope(
        "db.scores",
        json!({"type": "record", "name": "Value", "fields": fields}),
    )
}

pub(crate) fn dbz(before: Value, after: Value, op: &str) -> Value {
    json!({"before": before, "after": after, "op": op, "ts_ms": 1_700_000_000_000i64})
}

/// Acceptance 1, 2 and 4: Debezium-Avro from both sides — inserts, updates that keep and change
/// the join key, deletes, tombstones — and the right topic written with two schema versions,
/// joined left with generated retractions off, in Avro upsert output: the records, decoded with
/// the registered schemas by apache-avro's reader, are exactly those replay gives for the same
/// records as JSON.
#[test]
fn debezium_avro_cdc_in_avro_out_matches_replay_across_schema_versions() {
    cdc_scenario_with(true, &[]);
}

/// The same with JSON output.
#[test]
fn debezium_avro_cdc_matches_replay_across_schema_versions() {
    cdc_scenario_with(false, &[]);
}

/// An output record's key or value decoded by apache-avro with the schema its id names in the
/// registry, as JSON (`None`: absent).
pub(crate) fn decode_output(bytes: Option<&[u8]>) -> (Value, Option<u32>) {
    let Some(b) = bytes else {
        return (Value::Null, None);
    };
    assert_eq!(b[0], 0, "Confluent magic byte");
    let id = u32::from_be_bytes(b[1..5].try_into().unwrap());
    let schema = apache_avro::Schema::parse_str(&avro::schema_by_id(id)).unwrap();
    let mut body = &b[5..];
    // The crate's plain datum reader (deprecated for GenericDatumReader, same decoding).
    #[allow(deprecated)]
    let v = apache_avro::from_avro_datum(&schema, &mut body, None).expect("decodes");
    assert!(body.is_empty(), "the whole body is the datum");
    (Value::try_from(v).unwrap(), Some(id))
}

/// The id registered as the latest version of `subject`.
pub(crate) fn latest_id(subject: &str) -> u32 {
    let mut resp = ureq::get(format!(
        "{}/subjects/{subject}/versions/latest",
        avro::registry_url()
    ))
    .call()
    .unwrap();
    let v: Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
    v["id"].as_u64().unwrap() as u32
}

/// The CDC scenario, `extra` variables winning over its own; returns the process, still running.
pub(crate) fn cdc_scenario_with(avro_output: bool, extra: &[(String, String)]) -> Sidejoin {
    let (left, right, output) = kafka::join_topics("avro-cdc", [1, 1, 1]);
    let app = kafka::unique("avro-cdc-app");
    let users = Writer::new(&format!("{left}-value"), &users_schema());
    let scores1 = Writer::new(&format!("{right}-value"), &scores_schema(false));
    let scores2 = Writer::new(&format!("{right}-value"), &scores_schema(true));
    assert_ne!(scores1.id, scores2.id, "two schema versions, two ids");
    let env = kafka::with(cdc_env(&app, &left, &right, &output, avro_output), extra);
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);

    let steps = cdc_steps(&users, &scores1, &scores2);
    let ts = kafka::now_ms();
    let records = steps.iter().enumerate().map(|(i, (side, writer, value))| {
        let topic = if *side == "left" { &left } else { &right };
        let bytes = value.as_ref().map(|v| writer.frame(v));
        let line = json!({"side": side, "key": null, "value": value, "timestamp": ts + i as i64})
            .to_string();
        (
            (topic.clone(), Some(b"k".to_vec()), bytes, ts + i as i64),
            line,
        )
    });
    let lines = kafka::produce_one_by_one(&mut sj, records, WAIT);
    let expected = replay_records(&kafka::with(env.clone(), &[]), &lines);
    assert!(
        expected.len() >= 8,
        "the scenario produces output: {expected:?}"
    );
    let got = read_output(&output, expected.len(), avro_output);
    assert_eq!(got, expected, "logs:\n{}", sj.logs());
    // The hand-checked essentials: the moved score carries the v2 note, older rows read null.
    assert!(got.contains(&(
        json!({"id": 1, "sid": 11}),
        json!({"id": 1, "name": "anna", "sid": 11, "score": 7.0, "note": "moved"})
    )));
    assert!(got.contains(&(
        json!({"id": 1, "sid": 10}),
        json!({"id": 1, "name": "anna", "sid": 10, "score": 6.5, "note": null})
    )));
    assert_eq!(sj.metric("sidejoin_decode_errors_total", ""), 0.0);
    sj
}

/// The CDC scenario's variables: a left join of users and their scores, with Avro output when
/// `avro_output`.
pub(crate) fn cdc_env(
    app: &str,
    left: &str,
    right: &str,
    output: &str,
    avro_output: bool,
) -> Vec<(String, String)> {
    let join = env_of(&[
        ("SIDEJOIN_LEFT_FORMAT", "debezium-avro"),
        ("SIDEJOIN_RIGHT_FORMAT", "debezium-avro"),
        ("SIDEJOIN_LEFT_KEY", "id"),
        ("SIDEJOIN_RIGHT_KEY", "user_id"),
        ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
        ("SIDEJOIN_RIGHT_PRIMARY_KEY", "sid"),
        ("SIDEJOIN_JOIN_TYPE", "left"),
        ("SIDEJOIN_ALLOW_GENERATED_RETRACTS", "false"),
        (
            "SIDEJOIN_SELECT",
            "l.id AS id, l.name AS name, r.sid AS sid, r.score AS score, r.note AS note",
        ),
        ("SIDEJOIN_OUTPUT_MODE", "upsert"),
        ("SIDEJOIN_OUTPUT_KEY", "id,sid"),
    ]);
    let mut env = kafka::with(kafka::base_env(app, left, right, output), &join);
    env.push(("SIDEJOIN_SCHEMA_REGISTRY_URL".into(), avro::registry_url()));
    if avro_output {
        env.push(("SIDEJOIN_OUTPUT_FORMAT".into(), "avro".into()));
    }
    env
}

/// One CDC step: the side, its writer, and the Debezium envelope (`None`: a tombstone).
type Step<'a> = (&'static str, &'a Writer, Option<Value>);

/// The CDC scenario's steps: inserts, updates that keep and change the join key, deletes and
/// tombstones; the right side switches to schema v2 midway.
fn cdc_steps<'a>(users: &'a Writer, scores1: &'a Writer, scores2: &'a Writer) -> Vec<Step<'a>> {
    let ann = json!({"id": 1, "name": "ann"});
    let anna = json!({"id": 1, "name": "anna"});
    let bob = json!({"id": 2, "name": "bob"});
    let s10 = json!({"sid": 10, "user_id": 1, "score": 5.0});
    let s10b = json!({"sid": 10, "user_id": 1, "score": 6.5});
    let s11 = json!({"sid": 11, "user_id": 2, "score": 7.0});
    let s11moved = json!({"sid": 11, "user_id": 1, "score": 7.0, "note": "moved"});
    let s12 = json!({"sid": 12, "user_id": 2, "score": 9.25, "note": "new"});
    vec![
        ("left", users, Some(dbz(Value::Null, ann.clone(), "c"))),
        ("left", users, Some(dbz(Value::Null, bob.clone(), "r"))),
        ("right", scores1, Some(dbz(Value::Null, s10.clone(), "c"))),
        ("right", scores1, Some(dbz(Value::Null, s11.clone(), "c"))),
        ("left", users, Some(dbz(ann, anna.clone(), "u"))),
        ("right", scores1, Some(dbz(s10, s10b.clone(), "u"))),
        // Schema v2 from here on the right: the older rows read `note` as null.
        (
            "right",
            scores2,
            Some(dbz(
                json!({"sid": 11, "user_id": 2, "score": 7.0, "note": null}),
                s11moved.clone(),
                "u",
            )),
        ),
        ("right", scores2, Some(dbz(Value::Null, s12.clone(), "c"))),
        ("left", users, Some(dbz(bob, Value::Null, "d"))),
        ("left", users, None),
        ("right", scores2, Some(dbz(s12, Value::Null, "d"))),
        ("right", scores2, None),
        ("right", scores1, Some(dbz(s10b, Value::Null, "d"))),
    ]
}

/// `n` records of `output` as (key, value) JSON: decoded by apache-avro with the schemas
/// registered under `<topic>-key` and `<topic>-value` (`avro_output`), else parsed.
fn read_output(output: &str, n: usize, avro_output: bool) -> Vec<(Value, Value)> {
    let records = kafka::read_all(output, n, WAIT);
    if !avro_output {
        return records
            .iter()
            .map(|r| (r.key_json(), r.value_json()))
            .collect();
    }
    let (key_id, value_id) = (
        latest_id(&format!("{output}-key")),
        latest_id(&format!("{output}-value")),
    );
    records
        .iter()
        .map(|r| {
            let (k, kid) = decode_output(r.key.as_deref());
            let (v, vid) = decode_output(r.value.as_deref());
            assert_eq!(
                kid,
                Some(key_id),
                "keys use the registered <topic>-key schema"
            );
            assert!(
                vid.is_none() || vid == Some(value_id),
                "values use <topic>-value"
            );
            (k, v)
        })
        .collect()
}

/// Acceptance 6: with the registry down at start sidejoin is not ready and says why; once the
/// registry is up it becomes ready by itself; the registry password never reaches the logs.
#[test]
fn registry_down_at_start_then_up() {
    let (left, right, output) = kafka::join_topics("avro-down", [1, 1, 1]);
    let app = kafka::unique("avro-down-app");
    let (dir, url) = registry_to_start_later();
    let password = "pw-never-logged-9f3a";
    let mut env = kafka::base_env(&app, &left, &right, &output);
    env.extend(env_of(&[
        ("SIDEJOIN_LEFT_FORMAT", "avro"),
        ("SIDEJOIN_LEFT_KEY", "id"),
        ("SIDEJOIN_RIGHT_KEY", "id"),
        ("SIDEJOIN_SCHEMA_REGISTRY_URL", &url),
        ("SIDEJOIN_SCHEMA_REGISTRY_USERNAME", "sidejoin"),
        ("SIDEJOIN_SCHEMA_REGISTRY_PASSWORD", password),
        ("SIDEJOIN_SCHEMA_REGISTRY_TIMEOUT", "2s"),
    ]));
    let mut sj = Sidejoin::start("run", &env);
    let deadline = std::time::Instant::now() + WAIT;
    while !sj.logs().contains("schema registry unreachable") {
        assert!(std::time::Instant::now() < deadline, "{}", sj.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_ne!(
        sj.get("/readyz").0,
        200,
        "not ready while the registry is down"
    );
    let started = registry_script("start", &dir).output().unwrap();
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    sj.wait_ready(WAIT);
    // The registry works for it: a record decodes.
    produce_one_avro_record(&url, &left);
    sj.wait_records_in(1, WAIT);
    assert_eq!(sj.metric("sidejoin_decode_errors_total", ""), 0.0);
    let _ = registry_script("stop", &dir).status();
    let _ = std::fs::remove_dir_all(&dir);
    let logs = sj.logs();
    assert!(logs.contains("schema registry"), "{logs}");
    assert!(
        !logs.contains(password),
        "the password is in the logs:\n{logs}"
    );
    // Nor its basic-auth form (base64 of "sidejoin:pw-never-logged-9f3a").
    assert!(
        !logs.contains("c2lkZWpvaW46cHctbmV2ZXItbG9nZ2VkLTlmM2E"),
        "{logs}"
    );
}

/// A directory for a registry not started yet, with the two free ports it is to use (written
/// in `ports`, where scripts/registry.sh starts when they are free), and its URL.
fn registry_to_start_later() -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(kafka::unique("registry-later"));
    std::fs::create_dir_all(&dir).unwrap();
    let ports: Vec<u16> = (0..2)
        .map(|_| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        })
        .collect();
    std::fs::write(dir.join("ports"), format!("{} {}\n", ports[0], ports[1])).unwrap();
    let url = format!("http://127.0.0.1:{}/apis/ccompat/v7", ports[0]);
    (dir, url)
}

/// `scripts/registry.sh <command> <dir>`, to run.
fn registry_script(command: &str, dir: &std::path::Path) -> std::process::Command {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/registry.sh");
    let mut cmd = std::process::Command::new(script);
    cmd.arg(command).arg(dir);
    cmd
}

/// Registers a one-field schema for `left`'s values at the registry `url` and produces one
/// record written with it.
fn produce_one_avro_record(url: &str, left: &str) {
    let w = Writer {
        id: avro::register_at(
            url,
            &format!("{left}-value"),
            &json!({"type": "record", "name": "R", "fields": [{"name": "id", "type": "int"}]}),
        ),
        schema: apache_avro::Schema::parse(
            &json!({"type": "record", "name": "R", "fields": [{"name": "id", "type": "int"}]}),
        )
        .unwrap(),
    };
    avro::produce_bytes(
        &kafka::producer(),
        &[(
            left.to_owned(),
            None,
            Some(w.frame(&json!({"id": 1}))),
            kafka::now_ms(),
        )],
    );
}

/// `SIDEJOIN_<SIDE>_HASH_BY` on an Avro side names a column its writer schema does not have:
/// refused at start (exit 2) naming the column and the schema's fields, before any record.
#[test]
fn an_avro_side_repartitioned_by_a_column_its_schema_lacks_is_refused_at_start() {
    let (left, right, output) = kafka::join_topics("avro-hash", [2, 1, 1]);
    let app = kafka::unique("avro-hash-app");
    avro::register(
        &format!("{left}-value"),
        &json!({"type": "record", "name": "Order", "fields": [
            {"name": "id", "type": "long"}, {"name": "k", "type": "long"}
        ]}),
    );
    let join = [
        ("SIDEJOIN_LEFT_FORMAT", "avro"),
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_BROADCAST", "right"),
        ("SIDEJOIN_LEFT_HASH_BY", "region"),
        ("SIDEJOIN_SELECT", "l.id AS id"),
    ];
    let mut env = kafka::base_env(&app, &left, &right, &output);
    env.extend(join.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env.push(("SIDEJOIN_SCHEMA_REGISTRY_URL".into(), avro::registry_url()));
    let mut sj = Sidejoin::start("run", &env);
    assert_eq!(sj.wait(WAIT), 2, "{}", sj.logs());
    let logs = sj.logs();
    assert!(
        logs.contains(
            "SIDEJOIN_LEFT_HASH_BY: `region` is not a field of the left side's Avro rows"
        ) && logs.contains("latest version: id, k"),
        "{logs}"
    );
}
