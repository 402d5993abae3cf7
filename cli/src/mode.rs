//! `--mode`, `--weights`, `--aging-step`, `--aging-cap`: the priority mode of a command that
//! polls or explains polls (docs/DESIGN.md, "Priority modes").

use crate::error::CliError;
use docket_core::{Aging, PriorityMode, Weights};
use std::time::Duration;

/// How a poll shares its batch among priority levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Higher priority first, always (the default; can starve low levels).
    Strict,
    /// Shares by weight, over polls (see --weights).
    Weighted,
    /// Effective priority rises with the time due (see --aging-step, --aging-cap).
    Aging,
}

/// The priority-mode options.
#[derive(Debug, Clone, clap::Args)]
pub struct ModeArgs {
    /// Priority mode (with priority on).
    #[arg(long, value_enum, default_value_t = Mode::Strict)]
    pub mode: Mode,
    /// Weighted mode: `level:weight,...` (default 90:70,50:20,10:10).
    #[arg(long, value_name = "LEVEL:WEIGHT,...")]
    pub weights: Option<String>,
    /// Aging mode: seconds of waiting that raise the effective priority by one (default 60).
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    pub aging_step: f64,
    /// Aging mode: the most the effective priority rises (default 100).
    #[arg(long, value_name = "LEVELS", default_value_t = 100)]
    pub aging_cap: i16,
}

impl ModeArgs {
    /// The mode, validated.
    pub fn priority_mode(&self) -> Result<PriorityMode, CliError> {
        Ok(match self.mode {
            Mode::Strict => PriorityMode::Strict,
            Mode::Weighted => PriorityMode::Weighted(match &self.weights {
                Some(spec) => Weights::parse(spec)?,
                None => Weights::default(),
            }),
            Mode::Aging => {
                let step = Duration::try_from_secs_f64(self.aging_step).map_err(|_| {
                    CliError::Bench(format!(
                        "--aging-step {} is not a duration",
                        self.aging_step
                    ))
                })?;
                PriorityMode::Aging(Aging::new(step, self.aging_cap)?)
            }
        })
    }
}

/// One line that says what a mode does, for reports.
pub fn describe(mode: &PriorityMode) -> String {
    match mode {
        PriorityMode::Strict => "strict (higher level first, always)".to_owned(),
        PriorityMode::Weighted(w) => {
            let pairs: Vec<String> = w.levels().iter().map(|(l, w)| format!("{l}:{w}")).collect();
            format!(
                "weighted {} (a poll's batch goes to the level furthest behind its share)",
                pairs.join(",")
            )
        }
        PriorityMode::Aging(a) => format!(
            "aging +1 level per {:?} of waiting, at most +{} (bands of effective priority)",
            a.step(),
            a.cap()
        ),
    }
}
