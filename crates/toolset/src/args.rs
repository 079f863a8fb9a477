//! Reading a tool's JSON input by hand: each field is checked for its type, and a field that is missing or of
//! the wrong type gives an error naming it, for the model to correct its call. `null` counts as absent for an
//! optional field; fields the schema does not name are ignored (the schemas allow additional properties).

use serde_json::{Map, Value};

/// The input object of one call of the tool `tool`.
pub(crate) struct Args<'a> {
    tool: &'static str,
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// The input, which must be a JSON object.
    pub(crate) fn new(tool: &'static str, input: &'a Value) -> Result<Self, String> {
        match input {
            Value::Object(map) => Ok(Self { tool, map }),
            other => Err(format!(
                "Invalid arguments for function {tool}: the input must be a JSON object, got {}",
                kind(other)
            )),
        }
    }

    fn invalid(&self, field: &str, problem: &str) -> String {
        format!("Invalid arguments for function {}: `{field}`: {problem}", self.tool)
    }

    fn get(&self, field: &str) -> Option<&'a Value> {
        self.map.get(field).filter(|value| !value.is_null())
    }

    fn wrong_type(&self, field: &str, expected: &str, got: &Value) -> String {
        self.invalid(field, &format!("expected {expected}, got {}", kind(got)))
    }

    /// A required string.
    pub(crate) fn string(&self, field: &str) -> Result<&'a str, String> {
        self.opt_string(field)?.ok_or_else(|| self.invalid(field, "field required"))
    }

    /// An optional string.
    pub(crate) fn opt_string(&self, field: &str) -> Result<Option<&'a str>, String> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(self.wrong_type(field, "a string", other)),
        }
    }

    /// An optional boolean.
    pub(crate) fn opt_bool(&self, field: &str) -> Result<Option<bool>, String> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(other) => Err(self.wrong_type(field, "a boolean", other)),
        }
    }

    /// An optional integer (a whole number written as `5.0` is accepted; beyond `i64` it saturates).
    pub(crate) fn opt_int(&self, field: &str) -> Result<Option<i64>, String> {
        match self.get(field) {
            None => Ok(None),
            Some(value) => integer(value).map(Some).ok_or_else(|| self.wrong_type(field, "an integer", value)),
        }
    }

    /// An optional array of integers.
    pub(crate) fn opt_int_list(&self, field: &str) -> Result<Option<Vec<i64>>, String> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    integer(item).ok_or_else(|| self.wrong_type(&format!("{field}[{i}]"), "an integer", item))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(self.wrong_type(field, "an array of integers", other)),
        }
    }

    /// A rejected value of `field`, with why.
    pub(crate) fn rejected(&self, field: &str, problem: &str) -> String {
        self.invalid(field, problem)
    }
}

fn integer(value: &Value) -> Option<i64> {
    let Value::Number(number) = value else { return None };
    if let Some(n) = number.as_i64() {
        return Some(n);
    }
    if number.as_u64().is_some() {
        return Some(i64::MAX);
    }
    let f = number.as_f64()?;
    // `as` saturates at the bounds of i64.
    (f.is_finite() && f.fract() == 0.0).then_some(f as i64)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_checked_and_named() {
        let input = json!({"a": "x", "n": 3.0, "b": 1, "list": [1, "2"], "nothing": null});
        let args = Args::new("read", &input).unwrap();
        assert_eq!(args.string("a").unwrap(), "x");
        assert_eq!(args.opt_int("n").unwrap(), Some(3));
        assert_eq!(args.opt_string("nothing").unwrap(), None);
        assert_eq!(
            args.string("missing").unwrap_err(),
            "Invalid arguments for function read: `missing`: field required"
        );
        assert_eq!(
            args.opt_bool("b").unwrap_err(),
            "Invalid arguments for function read: `b`: expected a boolean, got an integer"
        );
        assert_eq!(
            args.opt_int_list("list").unwrap_err(),
            "Invalid arguments for function read: `list[1]`: expected an integer, got a string"
        );
        assert!(Args::new("read", &json!([1])).is_err());
        assert_eq!(integer(&json!(u64::MAX)), Some(i64::MAX));
        assert_eq!(integer(&json!(1.5)), None);
    }
}
