//! Topic IDs: the UUID a Kafka cluster gives a topic when it is created (KIP-516), so a topic
//! deleted and created again under the same name is told apart from the one before. rdkafka's
//! metadata does not expose them; librdkafka's Admin API does (`DescribeTopics`, since 2.3),
//! reached here through its C bindings on any client's handle.
//!
//! Only reads: nothing here creates, changes or caches a topic.

use std::ffi::{c_char, CStr, CString};
use std::time::Duration;

use rdkafka::bindings as rd;
use rdkafka::client::Client;
use rdkafka::ClientContext;

/// Why topic IDs could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TopicIdError {
    #[error("describing topics {topics:?} timed out after {ms} ms")]
    TimedOut { topics: Vec<String>, ms: u128 },
    #[error("describing topics {topics:?} failed: {why}")]
    Failed { topics: Vec<String>, why: String },
    /// The topic does not exist (deleted), or cannot be described.
    #[error("topic `{topic}`: {why}")]
    Topic { topic: String, why: String },
}

/// Each of `topics`' ID (base64, as Kafka's tools print it), in the order asked.
pub(crate) fn topic_ids<C: ClientContext>(
    client: &Client<C>,
    topics: &[&str],
    timeout: Duration,
) -> Result<Vec<String>, TopicIdError> {
    let names: Vec<CString> = (topics.iter())
        .map(|t| CString::new(*t).expect("topic names hold no NUL"))
        .collect();
    let mut ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    let rk = client.native_ptr();
    // SAFETY: every handle made here is destroyed before returning; the names outlive the call
    // (librdkafka copies them into the collection); the event's strings are copied before the
    // event is destroyed.
    unsafe {
        let coll = rd::rd_kafka_TopicCollection_of_topic_names(ptrs.as_mut_ptr(), ptrs.len());
        let queue = rd::rd_kafka_queue_new(rk);
        let opts = rd::rd_kafka_AdminOptions_new(
            rk,
            rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_DESCRIBETOPICS,
        );
        let mut errstr = [0 as c_char; 256];
        rd::rd_kafka_AdminOptions_set_request_timeout(opts, ms, errstr.as_mut_ptr(), 256);
        rd::rd_kafka_DescribeTopics(rk, coll, opts, queue);
        let event = rd::rd_kafka_queue_poll(queue, ms.saturating_add(1_000));
        let result = read_event(event, topics, timeout);
        if !event.is_null() {
            rd::rd_kafka_event_destroy(event);
        }
        rd::rd_kafka_AdminOptions_destroy(opts);
        rd::rd_kafka_TopicCollection_destroy(coll);
        rd::rd_kafka_queue_destroy(queue);
        result
    }
}

/// The IDs in a `DescribeTopics` result event.
///
/// # Safety
/// `event` is null or a live event of a `DescribeTopics` call.
unsafe fn read_event(
    event: *mut rd::rd_kafka_event_t,
    topics: &[&str],
    timeout: Duration,
) -> Result<Vec<String>, TopicIdError> {
    let asked = || topics.iter().map(|t| t.to_string()).collect::<Vec<_>>();
    if event.is_null() {
        return Err(TopicIdError::TimedOut {
            topics: asked(),
            ms: timeout.as_millis(),
        });
    }
    if rd::rd_kafka_event_error(event) != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
        return Err(TopicIdError::Failed {
            topics: asked(),
            why: text(rd::rd_kafka_event_error_string(event)),
        });
    }
    let res = rd::rd_kafka_event_DescribeTopics_result(event);
    let mut n = 0usize;
    let descs = rd::rd_kafka_DescribeTopics_result_topics(res, &mut n);
    let mut found = Vec::with_capacity(n);
    for i in 0..n {
        let d = *descs.add(i);
        let name = text(rd::rd_kafka_TopicDescription_name(d));
        let err = rd::rd_kafka_TopicDescription_error(d);
        if !err.is_null()
            && rd::rd_kafka_error_code(err) != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR
        {
            let why = text(rd::rd_kafka_error_string(err));
            return Err(TopicIdError::Topic { topic: name, why });
        }
        let id = text(rd::rd_kafka_Uuid_base64str(
            rd::rd_kafka_TopicDescription_topic_id(d),
        ));
        found.push((name, id));
    }
    (topics.iter())
        .map(|t| {
            (found.iter().find(|(name, _)| name == t))
                .map(|(_, id)| id.clone())
                .ok_or_else(|| TopicIdError::Topic {
                    topic: t.to_string(),
                    why: "not in the answer".into(),
                })
        })
        .collect()
}

/// A C string librdkafka owns, copied (empty for null).
///
/// # Safety
/// `p` is null or a NUL-terminated string alive for the call.
unsafe fn text(p: *const c_char) -> String {
    match p.is_null() {
        true => String::new(),
        false => CStr::from_ptr(p).to_string_lossy().into_owned(),
    }
}
