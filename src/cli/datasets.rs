//! `deltalogic datasets check`.

use super::check;
use super::emit;
use crate::store::Store;
use anyhow::Result;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Agreement of the solvers (ProofWriter, RuleTaker) and the FOLIO checker with the
    /// datasets' own labels; disagreements are listed.
    Check {
        /// Only this dataset (folio, proofwriter, ruletaker).
        #[arg(long)]
        dataset: Option<String>,
        /// How many disagreements to list per dataset.
        #[arg(long, default_value_t = 20, value_parser = super::bounds::count(0, super::bounds::MAX_SIZE))]
        list: usize,
        /// Instead: the sentences the theory grammar refuses, grouped by shape (entities `E`,
        /// verbs `V`, class nouns `N`, other content words `A`), most frequent first, with how
        /// many questions each blocks and one example. Covers the datasets written for the
        /// grammar (ProofWriter, RuleTaker, GLoRE RobustLR, generated), or `--dataset`.
        #[arg(long)]
        refused: bool,
        /// With --refused: how many shapes to show per dataset.
        #[arg(long, default_value_t = 20, requires = "refused")]
        limit: usize,
    },
}

pub fn run(store: &Store, json: bool, c: Command) -> Result<()> {
    let Command::Check {
        dataset,
        list,
        refused,
        limit,
    } = c;
    if refused {
        let r = check::refusals(store, dataset.as_deref(), limit)?;
        return emit(json, &r, || check::print_refusals(&r));
    }
    let r = check::check(store, dataset.as_deref())?;
    emit(json, &r, || check::print(&r, list))
}
