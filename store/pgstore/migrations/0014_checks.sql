-- External checks (job.Check). checks: each check as JSON
-- (store.EncodeCheck: its settings and the state pings change), its ping
-- ID unique. pings: each check's ping log (store.EncodePing), at most the
-- latest N kept per check, by seq. incidents take the problem
-- 'check_down'.

CREATE TABLE {schema}.checks (
    name    text PRIMARY KEY,
    ping_id text NOT NULL UNIQUE,
    doc     jsonb NOT NULL
);

CREATE TABLE {schema}.pings (
    check_name text   NOT NULL,
    seq        bigint NOT NULL,
    doc        jsonb  NOT NULL,
    PRIMARY KEY (check_name, seq)
);

ALTER TABLE {schema}.incidents DROP CONSTRAINT incidents_problem_check;
ALTER TABLE {schema}.incidents ADD CONSTRAINT incidents_problem_check
    CHECK (problem IN ('missed_start', 'over_duration', 'failing', 'check_down'));
