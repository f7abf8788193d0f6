-- schedules.catch_up: what a schedule does with the ticks it missed while
-- no server ran (job.CatchUp by name; 'one', the behaviour before, is the
-- default), and for 'all' the window (0: the default) and the cap (0: the
-- default) of its runs.

ALTER TABLE {schema}.schedules ADD COLUMN catch_up text NOT NULL DEFAULT 'one'
    CHECK (catch_up IN ('one', 'none', 'latest', 'all'));
ALTER TABLE {schema}.schedules ADD COLUMN catch_up_window_ns bigint NOT NULL DEFAULT 0;
ALTER TABLE {schema}.schedules ADD COLUMN catch_up_max integer NOT NULL DEFAULT 0;
