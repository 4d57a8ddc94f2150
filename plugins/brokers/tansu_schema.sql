-- chaoskit's PostgreSQL schema for tansu 0.6.0's postgres storage engine.
--
-- tansu's postgres engine runs no DDL: the tables must exist before a broker starts. This schema
-- is written from the statements the pinned version runs (tansu-storage's SQL and the Rust types
-- it binds), table by table: integer widths match what it binds and decodes (its PostgreSQL driver
-- refuses int8 for an i32), every ON CONFLICT target has its unique constraint, and a column its
-- inserts leave out has a default. Foreign keys are left out where tansu deletes rows without their
-- dependants (its retention and compaction jobs delete records but not their headers).
--
-- One thing in 0.6.0 needs PostgreSQL 16: ListOffsets for the latest offset under read_committed
-- (a subquery without an alias). On Debian 12's PostgreSQL 15 that request fails; nothing else.

create table cluster (
    id integer generated always as identity primary key,
    name text not null unique,
    last_updated timestamptz not null default now()
);

create table topic (
    id integer generated always as identity primary key,
    cluster integer not null references cluster (id),
    name text not null,
    uuid uuid not null unique,
    partitions integer not null,
    replication_factor integer not null,
    is_internal boolean not null default false,
    last_updated timestamptz not null default now(),
    unique (cluster, name)  -- a second CreateTopics of a name is refused as TopicAlreadyExists
);

create table topition (
    id integer generated always as identity primary key,
    topic integer not null references topic (id),
    partition integer not null,
    last_updated timestamptz not null default now(),
    unique (topic, partition)
);

create table watermark (
    id integer generated always as identity primary key,
    topition integer not null unique references topition (id),
    low bigint,
    high bigint,
    stable bigint,
    last_updated timestamptz not null default now()
);

create table topic_configuration (
    id integer generated always as identity primary key,
    topic integer not null references topic (id),
    name text not null,
    value text,
    last_updated timestamptz not null default now(),
    unique (topic, name)
);

create table record (
    topition integer not null references topition (id),
    offset_id bigint not null,
    attributes smallint,
    producer_id bigint,
    producer_epoch smallint,
    timestamp timestamptz not null,
    k bytea,
    v bytea,
    -- the writing transaction: a fetch reads past an offset only once its writer has finished
    transaction_id xid8 not null default pg_current_xact_id(),
    last_updated timestamptz not null default now(),
    primary key (topition, offset_id)
);

create table header (
    topition integer not null,
    offset_id bigint not null,
    k bytea,  -- Kafka allows one key twice in a record's headers: no unique key here
    v bytea,
    last_updated timestamptz not null default now()
);
create index header_record on header (topition, offset_id);

create table consumer_group (
    id integer generated always as identity primary key,
    cluster integer not null references cluster (id),
    name text not null,
    last_updated timestamptz not null default now(),
    unique (cluster, name)
);

create table consumer_group_detail (
    id integer generated always as identity primary key,
    consumer_group integer not null unique references consumer_group (id),
    e_tag uuid not null,
    detail jsonb not null,
    last_updated timestamptz not null default now()
);

create table consumer_offset (
    id integer generated always as identity primary key,
    consumer_group integer not null references consumer_group (id),
    topition integer not null references topition (id),
    committed_offset bigint not null,
    leader_epoch integer,
    timestamp timestamptz,
    metadata text,
    last_updated timestamptz not null default now(),
    unique (consumer_group, topition)
);

create table producer (
    id bigint generated always as identity primary key,
    cluster integer not null references cluster (id),
    last_updated timestamptz not null default now()
);

create table producer_epoch (
    id integer generated always as identity primary key,
    producer bigint not null references producer (id),
    epoch smallint not null,
    last_updated timestamptz not null default now(),
    unique (producer, epoch)
);

create table producer_detail (
    id integer generated always as identity primary key,
    producer_epoch integer not null references producer_epoch (id),
    topition integer not null references topition (id),
    sequence integer,
    last_updated timestamptz not null default now(),
    unique (producer_epoch, topition)
);

create table txn (
    id integer generated always as identity primary key,
    cluster integer not null references cluster (id),
    name text not null,
    producer bigint not null references producer (id),
    last_updated timestamptz not null default now(),
    unique (cluster, name)
);

create table txn_detail (
    id integer generated always as identity primary key,
    "transaction" integer not null references txn (id),
    producer_epoch integer not null references producer_epoch (id),
    transaction_timeout_ms integer,
    status text,  -- null until the first AddPartitionsToTxn
    started_at timestamptz,
    last_updated timestamptz not null default now(),
    unique ("transaction", producer_epoch)
);

create table txn_topition (
    id integer generated always as identity primary key,
    txn_detail integer not null references txn_detail (id),
    topition integer not null references topition (id),
    last_updated timestamptz not null default now()
);

create table txn_produce_offset (
    id integer generated always as identity primary key,
    txn_topition integer not null unique references txn_topition (id),
    offset_start bigint not null,
    offset_end bigint not null,
    last_updated timestamptz not null default now()
);

create table txn_offset_commit (
    id integer generated always as identity primary key,
    txn_detail integer not null references txn_detail (id),
    consumer_group integer not null references consumer_group (id),
    generation_id integer,
    member_id text,
    last_updated timestamptz not null default now()
);

create table txn_offset_commit_tp (
    id integer generated always as identity primary key,
    offset_commit integer not null references txn_offset_commit (id),
    topition integer not null references topition (id),
    committed_offset bigint not null,
    leader_epoch integer,
    metadata text,
    created_at timestamptz not null default now(),
    last_updated timestamptz not null default now()
);

create table scram_credential (
    id integer generated always as identity primary key,
    cluster integer not null references cluster (id),
    username text not null,
    mechanism integer not null,
    salt bytea not null,
    stored_key bytea not null,
    server_key bytea not null,
    iterations integer not null,
    last_updated timestamptz not null default now(),
    unique (cluster, username, mechanism)
);
