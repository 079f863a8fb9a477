//! `managed-agents chat`: a live conversation at the terminal. Each line typed is a message; at the prompt,
//! Ctrl-C or end of input quits (0); while a request runs, Ctrl-C interrupts it and a second one quits (130).

use crate::args::Output;
use crate::input::Input;
use crate::outcome::{self, EXIT_COMPLETED};
use crate::requests::{Requests, Sent};
use crate::screen::Screen;
use crate::signals::CtrlC;

/// Runs the chat until the user quits; returns the exit code.
pub async fn run(requests: &mut Requests, input: &Input, screen: &Screen, ctrl_c: &CtrlC) -> u8 {
    screen.note("Type a message and press Enter. Ctrl-C interrupts a turn; Ctrl-C at the prompt or Ctrl-D quits.");
    loop {
        let Some(line) = prompt(input, screen, ctrl_c).await else { return EXIT_COMPLETED };
        if let Sent::Quit = requests.send(line).await {
            return outcome::interrupted(screen.output() != Output::Text, requests.kept_id());
        }
    }
}

/// Asks for the next message; `None` when the user quits (Ctrl-C or end of input). Empty lines are skipped.
async fn prompt(input: &Input, screen: &Screen, ctrl_c: &CtrlC) -> Option<String> {
    ctrl_c.forget().await;
    loop {
        screen.ask("> ");
        tokio::select! {
            line = input.line() => match line {
                Some(line) if line.trim().is_empty() => continue,
                Some(line) => return Some(line),
                None => {
                    eprintln!();
                    return None;
                }
            },
            () = ctrl_c.next() => {
                eprintln!();
                return None;
            }
        }
    }
}
