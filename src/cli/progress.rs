//! The scoring progress bar: done/total, records/s, ETA, tokens/s (of our engine) and cache
//! hits, on standard error.

use crate::eval::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Instant;

pub struct Bar {
    bar: Option<ProgressBar>,
    hidden: bool,
    tokens: u64,
    started: Instant,
}

impl Bar {
    /// Hidden under `--json`, where standard error should stay quiet for scripts.
    pub fn new(hidden: bool) -> Bar {
        Bar {
            bar: None,
            hidden,
            tokens: 0,
            started: Instant::now(),
        }
    }
}

impl Progress for Bar {
    fn start(&mut self, total: u64, cached: u64) {
        let bar = ProgressBar::with_draw_target(
            Some(total),
            if self.hidden {
                ProgressDrawTarget::hidden()
            } else {
                ProgressDrawTarget::stderr()
            },
        );
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} records  {per_sec}  ETA {eta}  {msg}",
            )
            .expect("a valid template"),
        );
        bar.set_message(format!("{cached} cached"));
        self.bar = Some(bar);
        self.started = Instant::now();
        self.tokens = 0;
    }

    fn advance(&mut self, scores: u64, tokens: u64) {
        self.tokens += tokens;
        if let Some(bar) = &self.bar {
            bar.inc(scores);
            let secs = self.started.elapsed().as_secs_f64().max(1e-3);
            let cached = bar.message();
            let cached = cached.split(',').next().unwrap_or_default().to_string();
            // A served model's records come with no count of tokens run here.
            if self.tokens > 0 {
                bar.set_message(format!("{cached}, {:.0} tok/s", self.tokens as f64 / secs));
            }
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
