//! Layouts (`Value::Layout`): the notation, the map, notes, and the thread/value table as a
//! text grid (REPL, transcripts) or an SVG grid coloured by thread (notebook).

use crate::layout::picture::Picture;
use crate::layout::{LayoutValue, Notation};
use serde_json::{json, Map, Value as Json};

fn notation(l: &LayoutValue) -> &'static str {
    match l.notation {
        Notation::Cute => "cute",
        Notation::LinearLayout => "linear_layout",
    }
}

/// Plain text: the layout, its map, the notes, and the grid when there is a picture.
pub fn text(l: &LayoutValue) -> String {
    let mut s = l.text.clone();
    if !s.is_empty() {
        s += "\n";
    }
    s += &format!("map: {}", l.map);
    for n in &l.notes {
        s += &format!("\n{n}");
    }
    if let Some(p) = &l.picture {
        s += "\n";
        s += &grid(p);
    }
    s
}

/// A cell's label: `T3V1` (thread 3, value 1), `V5` without threads; `+k` when `k` more
/// hold the same element.
fn label(p: &Picture, holders: &[(i64, i64)]) -> String {
    match holders.first() {
        None => ".".into(),
        Some((t, v)) => {
            let mut s = if p.has_threads {
                format!("T{t}V{v}")
            } else {
                format!("{v}")
            };
            if holders.len() > 1 {
                s += &format!("+{}", holders.len() - 1);
            }
            s
        }
    }
}

/// The table as a text grid: a header of column indices, then one row per tensor row.
pub fn grid(p: &Picture) -> String {
    let labels: Vec<Vec<String>> = p
        .cells
        .iter()
        .map(|row| row.iter().map(|c| label(p, c)).collect())
        .collect();
    let w = labels
        .iter()
        .flatten()
        .map(|s| s.len())
        .chain([p.cols.saturating_sub(1).to_string().len()])
        .max()
        .unwrap_or(1);
    let rw = p.rows.saturating_sub(1).to_string().len();
    let mut out = format!("{:>rw$} |", "");
    for c in 0..p.cols {
        out += &format!(" {c:>w$}");
    }
    out += &format!("\n{}-+{}", "-".repeat(rw), "-".repeat((w + 1) * p.cols));
    for (r, row) in labels.iter().enumerate() {
        out += &format!("\n{r:>rw$} |");
        for l in row {
            out += &format!(" {l:>w$}");
        }
    }
    out
}

/// Tallest picture shown unscaled, in pixels.
const MAX_HEIGHT: f64 = 640.0;

/// The table as SVG: one rectangle per element, coloured by thread, labelled like the grid.
pub fn svg(p: &Picture) -> String {
    let cw = 46.0;
    let ch = 18.0;
    let left = 28.0;
    let top = 18.0;
    let width = left + cw * p.cols as f64 + 4.0;
    let height = top + ch * p.rows as f64 + 4.0;
    // A large table (a 128 x 32 MMA tile is 2300 pixels tall) is drawn at its full size in
    // the view box and shown scaled to fit a screen; it zooms without loss.
    let scale = (MAX_HEIGHT / height).min(1.0);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="{:.0}" viewBox="0 0 {width} {height}" font-family="monospace" font-size="9">"#,
        width * scale,
        height * scale
    );
    for c in 0..p.cols {
        s += &format!(
            r#"<text x="{}" y="{}" text-anchor="middle">{c}</text>"#,
            left + cw * (c as f64 + 0.5),
            top - 5.0
        );
    }
    for (r, row) in p.cells.iter().enumerate() {
        let y = top + ch * r as f64;
        s += &format!(
            r#"<text x="{}" y="{}" text-anchor="end">{r}</text>"#,
            left - 4.0,
            y + ch * 0.7
        );
        for (c, holders) in row.iter().enumerate() {
            let x = left + cw * c as f64;
            let fill = match holders.first() {
                Some((t, v)) => {
                    let k = if p.has_threads { *t } else { *v };
                    super::svg::color(k.rem_euclid(1 << 20) as u32)
                }
                None => "#ffffff",
            };
            s += &format!(
                r##"<rect x="{x}" y="{y}" width="{cw}" height="{ch}" fill="{fill}" stroke="#444" stroke-width="0.5"/><text x="{}" y="{}" text-anchor="middle">{}</text>"##,
                x + cw / 2.0,
                y + ch * 0.7,
                super::svg::escape(&label(p, holders))
            );
        }
    }
    s += "</svg>";
    s
}

pub fn html(l: &LayoutValue) -> String {
    let mut s = format!(
        "{}{}</pre>{}",
        super::html::PRE,
        super::svg::escape(&l.text),
        super::html::map(&l.map)
    );
    for n in &l.notes {
        s += &format!("<div>{}</div>", super::svg::escape(n));
    }
    if let Some(p) = &l.picture {
        s += &format!("<div style=\"overflow:auto\">{}</div>", svg(p));
    }
    s
}

pub fn json(l: &LayoutValue, obj: &mut Map<String, Json>) {
    obj.insert("notation".into(), json!(notation(l)));
    obj.insert("layout".into(), json!(l.text));
    obj.insert("map".into(), json!(l.map.to_string()));
    obj.insert("notes".into(), json!(l.notes));
    if let Some(p) = &l.picture {
        let cells: Vec<Vec<Json>> = p
            .cells
            .iter()
            .map(|row| {
                row.iter()
                    .map(|c| json!(c.iter().map(|(t, v)| json!([t, v])).collect::<Vec<_>>()))
                    .collect()
            })
            .collect();
        obj.insert("cells".into(), json!(cells));
    }
}
