#!/bin/sh
# docker-compose "producer": seed 000 (user 1 "zs", then its score 25), then forever one new user
# per second and a score for an earlier user, keyed by user_id ("KEY<TAB>VALUE" lines, one
# console producer per topic).
set -eu
tab=$(printf '\t')
produce() {
  /opt/kafka/bin/kafka-console-producer.sh --bootstrap-server "$BOOTSTRAP" --topic "$1" \
    --property parse.key=true --property "key.separator=$tab" \
    --producer-property acks=all --producer-property linger.ms=5
}
printf '{"user_id":"1"}\t{"user_id":"1","user_name":"zs"}\n' | produce user_info
sleep 2
printf '{"user_id":"1"}\t{"user_id":"1","score":25}\n' | produce user_score
rm -f /tmp/users /tmp/scores
mkfifo /tmp/users /tmp/scores
produce user_info </tmp/users &
produce user_score </tmp/scores &
exec 3>/tmp/users 4>/tmp/scores
i=2
while :; do
  printf '{"user_id":"%d"}\t{"user_id":"%d","user_name":"user%d"}\n' "$i" "$i" "$i" >&3
  u=$(( (i * 7) % (i - 1) + 1 ))
  printf '{"user_id":"%d"}\t{"user_id":"%d","score":%d}\n' "$u" "$u" "$(( i % 100 ))" >&4
  i=$((i + 1))
  sleep 1
done
