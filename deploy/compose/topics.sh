#!/bin/sh
# docker-compose "topics": the demo's topics, co-partitioned (same partition count), idempotent.
set -eu
for t in user_info user_score user_info_score; do
  /opt/kafka/bin/kafka-topics.sh --bootstrap-server "$BOOTSTRAP" --create --if-not-exists \
    --topic "$t" --partitions 3 --replication-factor 1
done
/opt/kafka/bin/kafka-topics.sh --bootstrap-server "$BOOTSTRAP" --describe --topic user_info_score
