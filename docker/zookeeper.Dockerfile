# ZooKeeper from the Debian package, run by the JVM directly (as the local backend does).
# The whole zoo.cfg comes in the ZOO_CFG environment variable (chaoskit generates it; compose.yaml
# spells one out), written to /data/zoo.cfg at each start.
ARG BASE
FROM ${BASE}
COPY zookeeper-entrypoint.sh /usr/local/bin/zookeeper-entrypoint.sh
USER 10001:10001
EXPOSE 2181 2888 3888
ENTRYPOINT ["/usr/local/bin/zookeeper-entrypoint.sh"]
