-- A conversation's model configuration (model, destination, telemetry metadata) as JSON text, never with a
-- credential. NULL: none chosen (every row written before this column).

ALTER TABLE conversations ADD COLUMN model_config TEXT;
