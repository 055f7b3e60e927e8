//! The explorable report: one self-contained HTML file (`report --format html`, and `run` beside
//! its other reports). Its CSS and script are compiled in (`html/page.css`, `html/explore.js`),
//! the figure is the report's own SVG inline, and its data ([`super::html_data`]) is one JSON
//! document in the page: the file opens from disk in any current browser and asks nothing of
//! the network. The script draws every table from that data, with the normalisation switchable
//! in place, and opens the items behind any number.

use super::{html_data, Entry};
use crate::benchmarks::Catalogue;
use crate::store::Store;
use anyhow::Result;

const CSS: &str = include_str!("html/page.css");
const SCRIPT: &str = include_str!("html/explore.js");

/// The page for `entries` (as [`super::entries`] gave them from `store`).
pub fn html(store: &Store, benchmarks: Catalogue, entries: &[Entry]) -> Result<String> {
    let data = html_data::collect(store, benchmarks, entries)?;
    // Inside <script>, `<` only ever occurs in JSON strings, where \u003c reads the same: no
    // text of an item can close the element.
    let json = serde_json::to_string(&data)?.replace('<', "\\u003c");
    let figure = super::svg(entries);
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>deltalogic report</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
         <header><h1>deltalogic report</h1>\
         <label>Normalisation <select id=\"norm\"></select></label></header>\n\
         <main>\n<section id=\"overview\"></section>\n\
         <section id=\"figure\"><h2>Figure</h2>\n{figure}</section>\n\
         <section id=\"robustness\"></section>\n\
         <section id=\"explore\" hidden></section>\n</main>\n\
         <script type=\"application/json\" id=\"data\">{json}</script>\n\
         <script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    ))
}
