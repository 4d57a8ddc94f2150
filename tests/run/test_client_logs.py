"""Stock client libraries' lines go to the run's clients.log, never to the terminal."""
from __future__ import annotations

import logging

from chaoskit.run.client_logs import FILE, LIBRDKAFKA, client_logs
from chaoskit.cluster.waiting import free_port


def test_a_library_line_goes_to_the_runs_file_and_nowhere_else(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    with client_logs(tmp_path):
        logging.getLogger("kafka.conn").error("socket disconnected")
        logging.getLogger("chaoskit.runner").warning("ours")
    logging.getLogger("kafka.conn").error("after the run")
    assert "socket disconnected" in (tmp_path / FILE).read_text()
    assert [r.getMessage() for r in caplog.records] == ["ours", "after the run"]


def test_librdkafka_logs_through_the_logger_it_is_given(tmp_path, capfd):
    """librdkafka writes its log lines to stderr from its own threads unless confluent-kafka is
    given a logger: then they are served through the client's calls, into the run's file."""
    from confluent_kafka import Producer

    with client_logs(tmp_path):
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{free_port()}", "logger": LIBRDKAFKA,
                             "reconnect.backoff.ms": 10})
        producer.produce("t", b"v")
        producer.flush(1.5)
        producer.purge()
        del producer
    assert "librdkafka" in (tmp_path / FILE).read_text()
    assert "%" not in capfd.readouterr().err  # librdkafka's own stderr format: %<level>|<time>|...
