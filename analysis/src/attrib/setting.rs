//! The settings attribution is measured in: what a failed case shows the
//! attributor. One labelled set measures all three by hiding parts of each
//! case.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a failed case holds when it is attributed.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// The annotated source evidence, the gold answer and the prediction,
    /// as a benchmark's labelled cases have them.
    #[default]
    Benchmark,
    /// The gold answer and the prediction, no annotated evidence: an
    /// evaluation run whose judge scored the answer 0.
    Evaluation,
    /// The question and the wrong prediction only: an answer flagged by a
    /// judge or a user in a live system, with no gold answer and no evidence.
    Production,
}

impl Setting {
    /// Every setting, from the most the case shows to the least.
    pub const ALL: [Setting; 3] = [Setting::Benchmark, Setting::Evaluation, Setting::Production];

    /// The name used in `--setting` and `SETTING` in a query.
    pub fn name(self) -> &'static str {
        match self {
            Setting::Benchmark => "benchmark",
            Setting::Evaluation => "evaluation",
            Setting::Production => "production",
        }
    }

    /// What the setting hides, in words.
    pub fn hides(self) -> &'static str {
        match self {
            Setting::Benchmark => "nothing",
            Setting::Evaluation => "the annotated evidence",
            Setting::Production => "the annotated evidence and the gold answer",
        }
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Setting {
    type Err = String;

    fn from_str(s: &str) -> Result<Setting, String> {
        Setting::ALL
            .into_iter()
            .find(|x| x.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown setting '{s}' (one of {}: benchmark hides nothing, evaluation hides \
                     the annotated evidence, production hides the evidence and the gold answer)",
                    Setting::ALL.map(Setting::name).join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_their_names_and_refuse_others() {
        for s in Setting::ALL {
            assert_eq!(s.name().parse::<Setting>(), Ok(s));
            assert_eq!(s.name().to_uppercase().parse::<Setting>(), Ok(s));
        }
        let e = "prod".parse::<Setting>().unwrap_err();
        assert!(e.contains("unknown setting 'prod'"), "{e}");
        assert_eq!(
            serde_json::to_string(&Setting::Production).unwrap(),
            "\"production\""
        );
    }
}
