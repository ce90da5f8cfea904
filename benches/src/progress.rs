//! The progress bar of `ecs-bench report` and of the long scenarios
//! ([`crate::scenarios::Scenario::long`]): one step per case, drawn on
//! stderr with `indicatif`, hidden under `--json` and when stderr is not a
//! terminal.

use std::collections::HashSet;
use std::io::IsTerminal as _;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::row::{Row, ScenarioId};

/// A bar over the cases of a run; lines printed through it go above it.
pub struct Progress {
    bar: ProgressBar,
    seen: HashSet<(ScenarioId, String)>,
}

impl Progress {
    /// A bar of `cases` steps; drawn only when `show` and stderr is a
    /// terminal.
    pub fn new(cases: usize, show: bool) -> Self {
        let bar = if show && std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(cases as u64), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} cases  {msg}") {
                bar.set_style(style);
            }
            bar
        } else {
            ProgressBar::hidden()
        };
        Progress { bar, seen: HashSet::new() }
    }

    /// Whether the bar is drawn.
    pub fn is_drawn(&self) -> bool {
        !self.bar.is_hidden()
    }

    /// Shows what runs now.
    pub fn running(&self, what: &str) {
        self.bar.set_message(what.to_owned());
    }

    /// Counts `row`'s case as done (once per scenario and case) and shows
    /// it as the last one measured.
    pub fn row(&mut self, row: &Row) {
        if self.seen.insert((row.scenario, row.case.to_string())) {
            self.bar.set_message(format!("{} {} done", row.scenario.name(), row.case));
            if self.bar.length().is_some_and(|len| self.bar.position() >= len) {
                self.bar.inc_length(1);
            }
            self.bar.inc(1);
        }
    }

    /// The cases counted so far.
    pub fn done(&self) -> usize {
        self.seen.len()
    }

    /// Prints `text` on stderr, above the bar when it is drawn.
    pub fn line(&self, text: &str) {
        self.bar.suspend(|| eprintln!("{text}"));
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Measurement;
    use crate::row::Impl;

    #[test]
    fn counts_each_case_once_and_stays_hidden_when_asked() {
        let m = Measurement { median_us: 1.0, min_us: 1.0, max_us: 1.0, samples: 1, iters_per_sample: 1 };
        let mut p = Progress::new(2, false);
        assert!(!p.is_drawn());
        for (case, imp) in [("a", Impl::Ours), ("a", Impl::Bevy), ("b", Impl::Ours), ("c", Impl::Ours)] {
            p.row(&Row::new(ScenarioId::Suite, case, imp, m.clone()));
        }
        p.row(&Row::new(ScenarioId::Skip, "a", Impl::Ours, m));
        assert_eq!(p.done(), 4);
        p.finish();
    }
}
