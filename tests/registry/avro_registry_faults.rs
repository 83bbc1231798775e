//! A schema registry that fails for one schema id (HTTP 503, as a registry whose storage lost
//! a shard would): the lookup is retried for `SIDEJOIN_SCHEMA_REGISTRY_RETRY_TIMEOUT`, then the
//! record follows `SIDEJOIN_ON_ERROR` (here the DLQ, with the reason); the other records join
//! and the instance stays healthy. The failing registry is a small proxy in front of the real
//! one (`TEST_REGISTRY_URL`) that answers 503 for that id and forwards everything else.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use crate::common::avro::{self, RawRecord, Writer};
use crate::common::kafka::{self, Sidejoin};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(120);
const VALID: i64 = 50;

/// A registry base URL that answers 503 for schema id `bad` and forwards the rest upstream.
fn failing_registry(bad: u32) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = avro::registry_url();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let up = upstream.clone();
            std::thread::spawn(move || serve(conn, &up, bad));
        }
    });
    format!("http://{addr}")
}

/// Answers the GET requests of one keep-alive connection.
fn serve(mut conn: TcpStream, upstream: &str, bad: u32) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
        // The headers, up to the blank line (sidejoin's lookups are GETs without a body).
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" {
                break;
            }
        }
        let (status, body) = if path.ends_with(&format!("/schemas/ids/{bad}")) {
            (
                503,
                r#"{"error_code":50301,"message":"test: unavailable"}"#.to_owned(),
            )
        } else {
            let answer = ureq::get(format!("{upstream}{path}"))
                .config()
                .http_status_as_error(false)
                .build()
                .call();
            match answer {
                Ok(mut r) => (
                    r.status().as_u16(),
                    r.body_mut().read_to_string().unwrap_or_default(),
                ),
                Err(e) => (502, e.to_string()),
            }
        };
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        if conn.write_all(head.as_bytes()).is_err() || conn.write_all(body.as_bytes()).is_err() {
            return;
        }
    }
}

fn row_schema(name: &str, column: &str) -> serde_json::Value {
    json!({"type": "record", "name": name, "fields": [
        {"name": "k", "type": "int"},
        {"name": column, "type": "string"}
    ]})
}

#[test]
fn a_schema_id_the_registry_fails_for_is_dead_lettered_after_the_retry_budget() {
    let (left, right, output) = kafka::join_topics("avro-503", [1, 1, 1]);
    let app = kafka::unique("avro-503-app");
    let dlq = kafka::unique("avro-503-dlq");
    let lw = Writer::new(&format!("{left}-value"), &row_schema("L", "v"));
    let rw = Writer::new(&format!("{right}-value"), &row_schema("R", "w"));
    // Another schema, registered for real: only the proxy fails for it.
    let failing = Writer::new(&kafka::unique("failing-value"), &row_schema("F", "v"));
    let ts = kafka::now_ms();
    let mut records: Vec<RawRecord> = Vec::new();
    for k in 0..VALID {
        let key = Some(k.to_string().into_bytes());
        let l = lw.frame(&json!({"k": k, "v": format!("l{k}")}));
        let r = rw.frame(&json!({"k": k, "w": format!("r{k}")}));
        records.push((left.clone(), key.clone(), Some(l), ts));
        records.push((right.clone(), key, Some(r), ts));
        if k == VALID / 2 {
            let bad = failing.frame(&json!({"k": k, "v": "unlucky"}));
            records.push((left.clone(), Some(b"unlucky".to_vec()), Some(bad), ts));
        }
    }
    avro::produce_bytes(&kafka::producer(), &records);
    let mut env = kafka::base_env(&app, &left, &right, &output);
    for (k, v) in [
        ("SIDEJOIN_LEFT_FORMAT", "avro"),
        ("SIDEJOIN_RIGHT_FORMAT", "avro"),
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_SELECT", "l.k AS k, l.v AS v, r.w AS w"),
        ("SIDEJOIN_DLQ_TOPIC", &dlq),
        ("SIDEJOIN_SCHEMA_REGISTRY_RETRY_TIMEOUT", "2s"),
        (
            "SIDEJOIN_SCHEMA_REGISTRY_URL",
            &failing_registry(failing.id),
        ),
    ] {
        env.push((k.to_owned(), v.to_owned()));
    }
    let mut sj = Sidejoin::start("run", &env);
    // Every record handled (the DLQ topic exists by then).
    sj.wait_records_in(records.len() as u64, WAIT);
    let dead = kafka::read_all(&dlq, 1, WAIT);
    assert_eq!(dead.len(), 1, "logs:\n{}", sj.logs());
    assert_eq!(dead[0].key.as_deref(), Some(&b"unlucky"[..]));
    let reason = (dead[0].headers.iter())
        .find(|(k, _)| *k == "sidejoin.error")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let id = format!("schema id {}", failing.id);
    assert!(
        reason.contains(&id) && reason.contains("HTTP 503"),
        "{reason}"
    );
    assert!(
        reason.contains("SIDEJOIN_SCHEMA_REGISTRY_RETRY_TIMEOUT"),
        "{reason}"
    );
    let joined = kafka::read_all(&output, VALID as usize, WAIT);
    assert_eq!(joined.len(), VALID as usize, "logs:\n{}", sj.logs());
    assert_eq!(sj.metric("sidejoin_dlq_records_total", ""), 1.0);
    assert_eq!(sj.get("/healthz").0, 200);
    sj.signal("TERM");
    assert_eq!(sj.wait(WAIT), 0, "{}", sj.logs());
}
