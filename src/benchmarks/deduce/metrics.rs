//! Deductive consistency (DeduCE's measure). A *case* is one problem asked with its first k
//! solution steps as premises; the model's continuation gives inferred values (see
//! [`super::extract`]), compared with the solution's next values.
//!
//! At (k, l), over the cases of premise count k whose solution has at least k + l steps:
//! - **consistency**: share whose l-th inferred value equals step k + l's value (the paper's
//!   per-hop share of correctly inferred variables);
//! - **strict**: share whose first l inferred values are all correct;
//! - **coverage**: share with at least l inferred values at all (the paper's reliability check:
//!   how often the model's steps can be matched to the solution).
//!
//! Final-answer accuracy: share of cases whose extracted final answer equals the problem's, over
//! the cases with at least one step left to infer.

use super::extract::Extracted;
use super::rational::Rational;

/// One case: the solution's values after the k given steps, the answer, and what was read.
#[derive(Clone, Debug)]
pub struct Case {
    pub next: Vec<Rational>,
    pub answer: Rational,
    pub got: Extracted,
}

impl Case {
    /// Whether the l-th inferred value (1-based) is correct; `None` when the solution has fewer
    /// than l further steps (the case does not count at this l).
    pub fn hop(&self, l: usize) -> Option<bool> {
        let gold = self.next.get(l.checked_sub(1)?)?;
        Some(self.got.steps.get(l - 1) == Some(gold))
    }

    /// Whether the first l inferred values are all correct; `None` as for [`Case::hop`].
    pub fn strict(&self, l: usize) -> Option<bool> {
        if l == 0 || self.next.len() < l {
            return None;
        }
        Some(
            self.next[..l]
                .iter()
                .zip(&self.got.steps)
                .filter(|(g, v)| g == v)
                .count()
                == l,
        )
    }

    /// Whether at least l values were inferred; `None` as for [`Case::hop`].
    pub fn covered(&self, l: usize) -> Option<bool> {
        (l >= 1 && self.next.len() >= l).then_some(self.got.steps.len() >= l)
    }

    /// Whether the extracted final answer is the problem's; `None` when the k given steps were
    /// the whole solution (the prompt already states the answer, so it measures nothing).
    pub fn final_correct(&self) -> Option<bool> {
        (!self.next.is_empty()).then_some(self.got.answer == Some(self.answer))
    }
}

/// The 0/1 scores of the cases a measure applies to (for means and bootstrap intervals).
pub fn scores(cases: &[&Case], measure: impl Fn(&Case) -> Option<bool>) -> Vec<f64> {
    cases
        .iter()
        .filter_map(|c| measure(c))
        .map(|b| f64::from(u8::from(b)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::extract::extract;
    use super::*;

    fn case(next: &[i128], continuation: &str) -> Case {
        Case {
            next: next.iter().map(|v| Rational::int(*v)).collect(),
            answer: Rational::int(next.last().copied().unwrap_or(5)),
            got: extract(continuation),
        }
    }

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len() as f64
    }

    #[test]
    fn per_hop_strict_and_coverage() {
        // Right, wrong, right: per-hop counts the third, strict does not.
        let a = case(&[9, 18, 20], "x = 9\ny = 17\nz = 20");
        // Only two lines for three steps.
        let b = case(&[4, 8, 16], "p = 4\nq = 8");
        // A one-step solution: not counted from l = 2 on.
        let c = case(&[5], "#### 5");
        let cases = [&a, &b, &c];
        assert_eq!(scores(&cases, |c| c.hop(1)), vec![1.0, 1.0, 0.0]);
        assert_eq!(scores(&cases, |c| c.hop(2)), vec![0.0, 1.0]);
        assert_eq!(scores(&cases, |c| c.hop(3)), vec![1.0, 0.0]);
        assert_eq!(scores(&cases, |c| c.strict(3)), vec![0.0, 0.0]);
        assert_eq!(scores(&cases, |c| c.strict(2)), vec![0.0, 1.0]);
        assert_eq!(mean(&scores(&cases, |c| c.covered(3))), 0.5);
        assert_eq!(scores(&cases, |c| c.covered(1)), vec![1.0, 1.0, 0.0]);
        // Final answers: a's last line (20), b's last line (8 ≠ 16), c's `####`.
        assert_eq!(scores(&cases, Case::final_correct), vec![1.0, 0.0, 1.0]);
        // Given its whole solution, a case says nothing about final answers.
        let given = case(&[], "#### 5");
        assert_eq!(given.final_correct(), None);
        assert_eq!(a.hop(0), None);
    }
}
