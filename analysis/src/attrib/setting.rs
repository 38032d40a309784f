//! The settings attribution is measured in: what a failed case shows the
//! attributor. One labelled set measures all three by hiding parts of each
//! case.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::case::FailedCase;

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

    /// The name used in `--setting` and `IN SETTING`.
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

    /// Hides from `case` what this setting does not show. The judge's
    /// response goes with the gold answer, since a judge quotes it.
    pub fn hide(self, case: &mut FailedCase) {
        if self >= Setting::Evaluation {
            case.source_evidence.clear();
        }
        if self >= Setting::Production {
            case.gold.clear();
            case.judge_response = None;
        }
    }

    /// The setting a case is in: what it actually holds, whatever was
    /// asked to be hidden.
    pub fn of(case: &FailedCase) -> Setting {
        let gold = case.gold.iter().any(|g| !g.trim().is_empty());
        match (case.source_evidence.is_empty(), gold) {
            (_, false) => Setting::Production,
            (true, true) => Setting::Evaluation,
            (false, true) => Setting::Benchmark,
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
    use memtrace_engine::CaseOrigin;

    fn case() -> FailedCase {
        FailedCase {
            trace: 1,
            graph_id: "g".into(),
            system: None,
            id: "query:q@1".into(),
            query_node: Some("query:q@1".into()),
            query: "What car does Omar drive?".into(),
            gold: vec!["a blue Volvo".into()],
            prediction: "a red Toyota".into(),
            judge_response: Some("WRONG: it is a blue Volvo".into()),
            source_evidence: vec!["message:m1@1".into()],
            origin: CaseOrigin::Annotation(0),
        }
    }

    #[test]
    fn each_setting_hides_what_it_says_and_a_case_knows_its_setting() {
        let mut c = case();
        assert_eq!(Setting::of(&c), Setting::Benchmark);
        Setting::Benchmark.hide(&mut c);
        assert_eq!(c, case());
        Setting::Evaluation.hide(&mut c);
        assert!(c.source_evidence.is_empty());
        assert_eq!(c.gold, ["a blue Volvo"]);
        assert_eq!(Setting::of(&c), Setting::Evaluation);
        Setting::Production.hide(&mut c);
        assert!(c.gold.is_empty() && c.judge_response.is_none());
        assert_eq!(c.prediction, "a red Toyota");
        assert_eq!(Setting::of(&c), Setting::Production);
        // A case without a gold answer is in production whatever it names.
        let mut c = case();
        c.gold = vec![" ".into()];
        assert_eq!(Setting::of(&c), Setting::Production);
    }

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
