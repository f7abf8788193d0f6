-- Hopper SQLite schema, version 10.
--
-- schedules.catch_up: what a schedule does with the ticks it missed while
-- no server ran (job.CatchUp by name; 'one', the behaviour before, is the
-- default), and for 'all' the window (nanoseconds, 0: the default) and the
-- cap (0: the default) of its runs.

ALTER TABLE schedules ADD COLUMN catch_up TEXT NOT NULL DEFAULT 'one'
    CHECK (catch_up IN ('one', 'none', 'latest', 'all'));
ALTER TABLE schedules ADD COLUMN catch_up_window INTEGER NOT NULL DEFAULT 0;
ALTER TABLE schedules ADD COLUMN catch_up_max INTEGER NOT NULL DEFAULT 0;
