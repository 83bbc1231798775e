use super::*;
use crate::config::{self, Mode};

fn config() -> Config {
    let env = [
        ("SIDEJOIN_LEFT_KEY", "user_id"),
        ("SIDEJOIN_RIGHT_KEY", "user_id"),
        ("SIDEJOIN_LEFT_FORMAT", "debezium-json"),
    ];
    let vars = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    config::load(vars, Mode::Check).expect("valid configuration")
}

fn pipeline() -> Pipeline {
    let cfg = config();
    let mut p = Pipeline::new(&cfg);
    p.check_copartitioning(&cfg);
    p
}

const ORDER: &[u8] = br#"{"op":"c","before":null,"after":{"id":7,"user_id":3}}"#;

#[test]
fn misfit_judges_a_key_without_processing_the_record() {
    let p = pipeline();
    let why = p.misfit(Side::Left, Some(br#"{"id":7}"#), Some(ORDER));
    assert!(
        why.as_deref()
            .is_some_and(|w| w.contains("does not hold the join-key column `user_id`")),
        "{why:?}"
    );
    assert_eq!(
        p.misfit(Side::Left, Some(br#"{"user_id":3}"#), Some(ORDER)),
        None
    );
    assert_eq!(p.misfit(Side::Left, Some(b"3"), Some(ORDER)), None);
}

#[test]
fn misfit_judges_nothing_before_the_check_is_on() {
    let p = Pipeline::new(&config());
    assert_eq!(
        p.misfit(Side::Left, Some(br#"{"id":7}"#), Some(ORDER)),
        None
    );
}

#[test]
fn misfit_leaves_undecodable_and_unjudgeable_records_to_processing() {
    let p = pipeline();
    assert_eq!(
        p.misfit(Side::Left, Some(br#"{"id":7}"#), Some(b"not json")),
        None
    );
    assert_eq!(p.misfit(Side::Left, Some(b"order-7"), Some(ORDER)), None);
}
