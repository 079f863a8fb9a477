//! Where `run`'s prompt comes from: the argument; stdin when it is piped (or the argument is `-`); or
//! `--prompt-file`. An empty prompt is a usage error, not a request.

use std::io::{IsTerminal, Read};
use std::path::Path;

use crate::outcome::UsageError;

/// The prompt of `run`, read from wherever it is.
pub fn read(argument: Option<&str>, file: Option<&Path>) -> Result<String, UsageError> {
    let prompt = match (argument, file) {
        (_, Some(path)) => std::fs::read_to_string(path)
            .map_err(|error| UsageError(format!("--prompt-file: cannot read {}: {error}", path.display())))?,
        (Some("-"), None) => from_stdin()?,
        (Some(prompt), None) => prompt.to_string(),
        (None, None) if !std::io::stdin().is_terminal() => from_stdin()?,
        (None, None) => {
            return Err(UsageError(
                "no prompt: give it as an argument, pipe it in (`… | managed-agents run`), or pass --prompt-file FILE"
                    .into(),
            ));
        }
    };
    check(prompt)
}

/// All of stdin, as text.
fn from_stdin() -> Result<String, UsageError> {
    let mut prompt = String::new();
    std::io::stdin()
        .read_to_string(&mut prompt)
        .map_err(|error| UsageError(format!("cannot read the prompt from stdin: {error}")))?;
    Ok(prompt)
}

/// The prompt, unless it is empty (or only white space).
pub fn check(prompt: String) -> Result<String, UsageError> {
    if prompt.trim().is_empty() {
        return Err(UsageError("the prompt is empty: there is nothing to send".into()));
    }
    Ok(prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_prompts_are_refused() {
        assert!(check(" \n\t".into()).is_err());
        assert_eq!(check(" hi ".into()).unwrap(), " hi ");
    }
}
