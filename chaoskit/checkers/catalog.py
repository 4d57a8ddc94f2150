"""The checks by name (DESIGN.md §7): what each means, how a witness reads, its report category.

One entry per check holds everything said about it: the description, the Allure category its
failures are filed under, the op kinds (f) a history must hold for it to apply (`needs`: a check
asked for by name whose ops are absent is "unknown", never a vacuous pass), the sentence each
witness row fills in (`explain`), and its evidence: the count of what it had to judge that must
not be zero (`evidence`, and `nothing` says what was missing when it is), or the check judged
nothing and its verdict is "unknown", never clean. Each engine implements a Kafka check as a function named after
it (`function`: key-order -> key_order) in its checks module (checkers/local/checks.py,
checkers/spark/checks.py).
"""
from __future__ import annotations

from dataclasses import dataclass

# key-order's reasons (the %d are the two deliveries' partitions), the same text from both engines
OUT_OF_ORDER = "the second was delivered first"
# moved-value-kept: a key's writes on its new partition count as chances for §9's tombstone (sent
# with acks=0 right after each) once compaction passed its old partition this long after them, and
# a key is judged with at least this many (one tombstone can be lost with its acks=0 send)
MOVED_MARGIN_NS = 2_000_000_000
MOVED_CHANCES = 2
NOT_MOVED = "no key-revoked(p%d) then key-assigned(p%d) between the deliveries"


@dataclass(frozen=True)
class Check:
    name: str
    description: str
    category: str  # the Allure category its failures are filed under
    needs: frozenset[str]
    explain: str = ""  # a witness row's explanation, formatted with the row's fields
    evidence: str = ""  # the count of what it judged; zero means it judged nothing
    nothing: str = ""  # what was missing when `evidence` is zero
    any_of: bool = False  # one of `needs` suffices (an offset's values are known from sends or from polls)
    # run only when named: it judges only runs whose story keeps every member alive (see its description)
    by_name: bool = False

    def missing(self, present: frozenset[str] | set[str]) -> frozenset[str]:
        """The op kinds it needs that the history lacks (empty: it applies)."""
        if self.any_of and self.needs & present:
            return frozenset()
        return self.needs - present

    @property
    def function(self) -> str:
        """The name of the function implementing it in each engine's checks module."""
        return self.name.replace("-", "_")


def _kafka(name: str, description: str, category: str, explain: str, evidence: tuple[str, str],
           *needs: str, any_of: bool = False, by_name: bool = False) -> Check:
    return Check(name, description, category, frozenset(needs), explain, *evidence, any_of=any_of, by_name=by_name)


KAFKA_CHECKS: tuple[Check, ...] = (
    _kafka("lost-write", "an acknowledged write was never read although later offsets of its partition were",
           "Lost data",
           "send {value} by process {process} was acknowledged at {topic}/{partition} offset {offset}, "
           "offsets up to {max_read} there were read, but it never was",
           ("acked_read", "no acknowledged write was ever read"), "send", "poll"),
    _kafka("unseen", "an acknowledged write was never read, and nothing after it in its partition was either",
           "Lost data",
           "send {value} by process {process} was acknowledged at {topic}/{partition} offset {offset} "
           "and no poll ever delivered it",
           ("acked", "no send was acknowledged"), "send", "poll"),
    _kafka("duplicate", "one value was written or read at more than one offset", "Duplicates",
           "value {value} is at {count} places: {positions}",
           ("values", "no value was written or read"), "send", "poll", any_of=True),
    _kafka("inconsistent-offsets", "one offset of a partition held different values", "Divergent logs",
           "{topic}/{partition} offset {offset} holds different values: {values}",
           ("offsets", "no offset was written or read"), "send", "poll", any_of=True),
    _kafka("poll-skip", "a consumer's next record of a partition jumped over offsets known to exist, without a "
           "rebalance", "Consumer order",
           "process {process} read {topic}/{partition} offset {from_offset} then {to_offset} (op {index}), "
           "skipping {missed} known offset(s) between them",
           ("steps", "no consumer read two records of a partition in a row"), "poll"),
    _kafka("nonmonotonic-poll", "a consumer read an offset of a partition not greater than the one before, "
           "without a rebalance", "Consumer order",
           "process {process} read {topic}/{partition} offset {from_offset} then {to_offset} (op {index}) "
           "with no rebalance or truncation report in between",
           ("steps", "no consumer read two records of a partition in a row"), "poll"),
    _kafka("nonmonotonic-send", "a producer's later send to a partition got an offset not greater than its "
           "earlier one", "Producer order",
           "process {process}'s sends to {topic}/{partition} got offset {from_offset} then {to_offset} "
           "(send invoked at op {index})",
           ("send_pairs", "no producer had two sends to one partition acknowledged"), "send"),
    _kafka("key-order", "of two records of one key from one producer, the later was delivered before the "
           "earlier (KIP-253, across partitions and consumers), or, where the client records key callbacks, "
           "delivered from another partition without key-revoked then key-assigned between the two "
           "(nor that partition removed between them)",
           "Key order (KIP-253)",
           "key {key}: process {process} sent {first} (p{first_partition}) before {second} "
           "(p{second_partition}), delivered at op {first_delivered} and op {second_delivered}: {reason}",
           ("key_pairs", "no producer had two sends of one key delivered"),
           "send", "poll"),
    _kafka("truncation-undetected", "a consumer read a record whose offset later held other content, and "
           "the consumers went on past it: nobody read the partition again at or below that offset, nor "
           "reported a truncation there (KIP-320)", "Truncation (KIP-320)",
           "process {process} read {value} at {topic}/{partition} offset {offset} (op {index}); that offset "
           "later held {later}, and after the read no consumer read the partition again at or below it, nor "
           "reported a truncation there",
           ("replaced_reads", "no consumer read a record that a truncation later replaced"), "send", "poll"),
    _kafka("write-to-readonly", "a write invoked after its partition became ReadOnly/None was acknowledged "
           "(KIP-694)", "Partition reduction (KIP-694)",
           "send {value} by process {process} (invoked at op {index}) was acknowledged at {topic}/{partition} "
           "offset {offset} although the partition was {mode} since op {mode_index}",
           ("displaced_sends", "no send was invoked for a key last written to a partition then ReadOnly or "
            "None"), "send", "partition-mode"),
    _kafka("moved-value-kept", "a key's value from before it moved to another partition was still on its old "
           "partition when the topic was read back from its start, though the key had been written on the new "
           "one long enough before compaction passed the old one (KIP-253 §9's tombstone removes it): a reader "
           "restoring the topic can bring it back, and once the key is deleted it does", "Compaction (KIP-253 §9)",
           "key {key}: {value} (process {process}, op {index}) was still at {topic}/{partition} offset {offset} "
           "when the topic was read back, though the key had moved to p{moved_to} and been written there "
           "{writes} times at least " + str(MOVED_MARGIN_NS // 10**9) + " s before compaction passed p{partition}",
           ("moved_keys", "no key moved to another partition long enough before compaction passed its old one "
            "(it needs a compacted topic that grows, read back after the run)"), "send", "restore"),
    _kafka("commit-regressed", "a consumer group's committed offset of a partition, as the broker answered it, "
           "went back or vanished (-1) later: the group's consumers would read again what they had finished",
           "Consumer groups",
           "group {group}: the committed offset of {topic}/{partition} was {from_offset} (op {from_index}), "
           "then {to_offset} (op {index})",
           ("commit_pairs", "no committed offset above 0 was read twice (it needs records consumed and the "
            "workload's watchers: keyed-sequences' `watchers`)"), "committed"),
    _kafka("double-owner", "two members of one consumer group read one partition in turns: a member read it, "
           "another then did, and the first read it again with no assignment of its own in between, so both "
           "held it at once. Kafka lets a member that lost its session (stalled, cut off) read on until it "
           "learns so: asked for by name, for runs whose members all stay alive", "Consumer groups",
           "{topic}/{partition}: process {process} read offset {from_offset} (op {from_index}), process {other} "
           "then read offset {other_offset} (op {other_index}), and process {process} offset {offset} (op {index}) "
           "with no assignment of its own in between",
           ("handovers", "no partition passed from one member to another"),
           "poll", "on_partitions_assigned", "on_partitions_revoked", by_name=True),
    _kafka("coordinator-split", "one consumer group was served by two coordinator partitions (KAFKA-20029 "
           "guardrail)", "Coordinator (KAFKA-20029)",
           "group {group} was served by coordinator partitions {partitions}",
           ("answers", "no coordinator answer was recorded"), "coordinator"),
)

# Jepsen's anomalies that have no check of ours by that name (checkers/{local,spark}/jepsen_checks.py);
# run by default on histories read from Jepsen (docs/history.md). The seven of Jepsen's names that are
# also ours above follow Jepsen's rules on such histories (jepsen_checks.py has them by the same name).
def _cycle(name: str, what: str) -> Check:
    return _kafka(name, f"{what} (Elle's cycles over the Jepsen ops' dependencies, checkers/cycles.py)",
                  "Transactions (Jepsen)", "{cycle}",
                  ("transactions", "no Jepsen send, poll or txn op completed (the graph is made of Jepsen's ops)"),
                  "send", "poll", "txn", any_of=True)


JEPSEN_CHECKS: tuple[Check, ...] = (
    _kafka("int-poll-skip", "within one transaction (Jepsen op), two consecutive reads of a key skipped over "
           "values known to be between them, with no rebalance of the key during it", "Consumer order",
           "process {process} read {topic}/{partition} offset {from_offset} then {to_offset} in one op "
           "(op {index}), skipping {missed} known offset(s) between them",
           ("steps", "no op read two records of a key"), "poll"),
    _kafka("int-nonmonotonic-poll", "within one transaction (Jepsen op), a read of a key was not after the one "
           "before it in the key's version order, with no rebalance of the key during it", "Consumer order",
           "process {process} read {topic}/{partition} offset {from_offset} then {to_offset} in one op (op {index})",
           ("steps", "no op read two records of a key"), "poll"),
    _kafka("int-nonmonotonic-send", "within one transaction (Jepsen op), a send to a key landed not after the "
           "one before it in the key's version order", "Producer order",
           "process {process}'s sends to {topic}/{partition} in one op landed at offset {from_offset} then "
           "{to_offset} (op {index})",
           ("send_pairs", "no op sent two values of a key whose places are known"), "send"),
    _kafka("int-send-skip", "within one transaction (Jepsen op), two sends to a key landed more than one place "
           "apart in the key's version order (counted as allowed: Jepsen's Kafka checker allows it, a "
           "transaction's writes interleave with others')", "Producer order", "",
           ("send_pairs", "no op sent two values of a key whose places are known"), "send"),
    _kafka("G1a", "aborted read: an ok poll read a value whose send failed", "Aborted reads",
           "process {process} read {value} at {topic}/{partition} offset {offset} (op {index}), which the send "
           "invoked at op {writer} failed to write",
           ("failed_sends", "no send failed"), "send", "poll"),
    _kafka("precommitted-read", "a transaction read a value it sent itself (read committed forbids seeing a "
           "transaction's records before it commits)", "Aborted reads",
           "the transaction of process {process} (op {index}) read {value} at {topic}/{partition}, which it sent",
           ("txns", "no transaction both sent and read"), "txn"),
    _cycle("G0", "write cycle: ops whose writes each follow another's in a key's version order, round to the "
           "first (counted as allowed: Jepsen's Kafka checker allows it, Kafka does not isolate writes)"),
    _cycle("G0-realtime", "write cycle that needs real-time order as well (counted as allowed, as G0)"),
    _cycle("G1c", "circular information flow: ops each reading what another wrote, round to the first"),
    _cycle("G1c-realtime", "circular information flow that needs real-time order as well: an op read what "
           "an op invoked after it completed wrote"),
)

# the linearizability checker (chaoskit.checkers.linearizable; its search in checkers/linear/)
LINEARIZABLE = Check("linearizable", "the history has a legal sequential order consistent with real time "
                     "(Wing-Gong search with Lowe's memoization)", "Linearizability", frozenset())

CHECKS: dict[str, Check] = {c.name: c for c in (*KAFKA_CHECKS, *JEPSEN_CHECKS, LINEARIZABLE)}
MODELS = ("kafka", "cas-register", "kv", "list-append")
