#!/bin/sh
# Write ZOO_CFG (and myid for a quorum member) under /data, then become the ZooKeeper JVM.
set -eu
: "${ZOO_CFG:?ZOO_CFG must hold the zoo.cfg text}"
mkdir -p /data/zk
printf '%s\n' "$ZOO_CFG" > /data/zoo.cfg
[ -z "${ZK_MYID:-}" ] || printf '%s\n' "$ZK_MYID" > /data/zk/myid
exec java "-Xmx${ZK_HEAP_MB:-256}m" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Dzookeeper.jmx.log4j.disable=true \
  -Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS \
  -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
  org.apache.zookeeper.server.quorum.QuorumPeerMain /data/zoo.cfg
