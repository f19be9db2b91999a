//! SVG pictures: access patterns drawn from a [`Plot`]. The dimension points (output
//! elements or threads) on the left, the elements of the target tensor on the right, each
//! cell filled with the colour of the group that owns it (left) or reads it (right); a cell
//! read by several groups is outlined in black and shows how many.
//!
//! ```text
//! plot (d0) -> (d0 floordiv 2), domain: d0 in [0, 7]
//!   left:  8 cells, colours 0..7            right: 4 cells, each read by 2 colours
//! ```
//!
//! The output is self-contained (no scripts, no external fonts), so it displays inline in
//! Jupyter (image/svg+xml), in nbconvert's HTML, and as a file.

use crate::value::{Grid, Plot};
use std::fmt::Write;

/// A qualitative palette (Tableau 20 order): neighbouring groups get distinct hues.
pub const PALETTE: [&str; 20] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
    "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
];

/// The fill colour of group `g`.
pub fn color(g: u32) -> &'static str {
    PALETTE[g as usize % PALETTE.len()]
}

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Cell size in pixels so that the wider grid fits in about 480 px.
fn cell_size(p: &Plot) -> f64 {
    let widest = p
        .from
        .cols
        .max(p.to.cols)
        .max(p.from.rows.max(p.to.rows) / 2)
        .max(1) as f64;
    (480.0 / widest).clamp(4.0, 22.0)
}

/// Draws the grid with its top-left corner at (x, y); returns its (width, height).
fn grid(out: &mut String, g: &Grid, x: f64, y: f64, cell: f64) -> (f64, f64) {
    let label_w = 34.0;
    let top = 40.0;
    let _ = writeln!(
        out,
        r#"<text x="{x:.1}" y="{:.1}" font-size="13" font-weight="bold">{}</text>"#,
        y + 13.0,
        escape(&g.title)
    );
    let gx = x + label_w;
    let gy = y + top;
    // Axis names and every k-th index, k chosen so labels do not overlap.
    let every = |n: usize| -> usize { ((14.0 / cell).ceil() as usize).max(1).min(n.max(1)) };
    let _ = writeln!(
        out,
        r##"<text x="{gx:.1}" y="{:.1}" font-size="10" fill="#555">{} →</text>"##,
        y + 26.0,
        escape(&g.col_axis)
    );
    let kc = every(g.cols);
    for c in (0..g.cols).step_by(kc) {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="9" fill="#555" text-anchor="middle">{}</text>"##,
            gx + (c as f64 + 0.5) * cell,
            gy - 3.0,
            g.col0 + c as i64
        );
    }
    let kr = every(g.rows);
    for r in (0..g.rows).step_by(kr) {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="9" fill="#555" text-anchor="end">{}</text>"##,
            gx - 3.0,
            gy + (r as f64 + 0.5) * cell + 3.0,
            g.row0 + r as i64
        );
    }
    // The row axis reads downwards, as the rows count; a single row has no axis to name.
    let row_label = !(g.rows <= 1 && g.row_axis.starts_with("(one"));
    let row_label_len = if row_label {
        label_px(&format!("{} →", g.row_axis), 10.0)
    } else {
        0.0
    };
    if row_label {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#555" transform="rotate(90 {:.1} {:.1})">{} →</text>"##,
            x + 4.0,
            gy,
            x + 4.0,
            gy,
            escape(&g.row_axis)
        );
    }
    for r in 0..g.rows {
        for c in 0..g.cols {
            let groups = &g.cells[r * g.cols + c];
            let (cx, cy) = (gx + c as f64 * cell, gy + r as f64 * cell);
            let fill = groups.first().map_or("#f4f4f4", |&g| color(g));
            let (stroke, sw) = if groups.len() > 1 {
                ("#000", 1.5)
            } else {
                ("#fff", 0.5)
            };
            let _ = write!(
                out,
                r#"<rect x="{cx:.1}" y="{cy:.1}" width="{cell:.1}" height="{cell:.1}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}">"#
            );
            let who = if groups.is_empty() {
                "not read".to_string()
            } else {
                format!(
                    "colour {}",
                    groups
                        .iter()
                        .map(|g| g.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let _ = writeln!(
                out,
                "<title>({}, {}): {who}</title></rect>",
                g.row0 + r as i64,
                g.col0 + c as i64
            );
            if g.sector > 0 && (r * g.cols + c).is_multiple_of(g.sector) {
                // A sector starts here: a dark bar on the cell's left edge.
                let _ = writeln!(
                    out,
                    r##"<line x1="{cx:.1}" y1="{cy:.1}" x2="{cx:.1}" y2="{:.1}" stroke="#111" stroke-width="2"/>"##,
                    cy + cell
                );
            }
            if groups.len() > 1 && cell >= 12.0 {
                let _ = writeln!(
                    out,
                    r##"<text x="{:.1}" y="{:.1}" font-size="{:.0}" text-anchor="middle" fill="#000">{}</text>"##,
                    cx + cell / 2.0,
                    cy + cell / 2.0 + cell * 0.18,
                    cell * 0.5,
                    groups.len()
                );
            }
        }
    }
    // Wide enough for the title and the column axis name, so side-by-side grids never
    // overlap; tall enough for the row axis name, so it never runs into the notes below.
    let title_w = label_px(&g.title, 13.0) * 1.1;
    let col_w = label_w + label_px(&format!("{} →", g.col_axis), 10.0);
    (
        (label_w + g.cols as f64 * cell).max(title_w).max(col_w),
        top + (g.rows as f64 * cell).max(row_label_len + 4.0),
    )
}

/// About how wide a line of sans-serif text is, in pixels (0.6 em a character, generous).
pub fn label_px(s: &str, font_size: f64) -> f64 {
    s.chars().count() as f64 * font_size * 0.6
}

/// The access-pattern picture of `p` as a standalone SVG document.
pub fn plot(p: &Plot) -> String {
    let cell = cell_size(p);
    let mut body = String::new();
    let margin = 10.0;
    let header = 40.0;
    let (w1, h1) = grid(&mut body, &p.from, margin, header, cell);
    let gap = 40.0;
    let x2 = margin + w1 + gap;
    let (w2, h2) = grid(&mut body, &p.to, x2, header, cell);
    // An arrow between the grids: the map.
    let ay = header + 40.0 + 12.0;
    let _ = writeln!(
        body,
        r##"<path d="M {:.1} {ay:.1} L {:.1} {ay:.1}" stroke="#333" stroke-width="1.5" marker-end="url(#ixmap-arrow)"/>"##,
        margin + w1 + 6.0,
        x2 - 6.0
    );
    let mut y = header + h1.max(h2) + 18.0;
    let mut lines = vec![format!("colour = {}", p.color_by)];
    lines.extend(p.notes.iter().cloned());
    for l in &lines {
        let _ = writeln!(
            body,
            r##"<text x="{margin:.1}" y="{y:.1}" font-size="11" fill="#333">{}</text>"##,
            escape(l)
        );
        y += 15.0;
    }
    let text_w = 2.0 * margin + 7.3 * shorten(&p.map, 110).chars().count() as f64;
    let notes_w = lines.iter().map(|l| label_px(l, 11.0)).fold(0.0, f64::max) + 2.0 * margin;
    let width = (x2 + w2 + margin).max(420.0).max(text_w).max(notes_w);
    let height = y;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif">"#
    );
    out += r##"<defs><marker id="ixmap-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M 0 0 L 10 5 L 0 10 z" fill="#333"/></marker></defs>"##;
    out += "\n";
    let _ = writeln!(
        out,
        r#"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="white"/>"#
    );
    let _ = writeln!(
        out,
        r#"<text x="{margin:.1}" y="20" font-size="12" font-family="monospace">{}</text>"#,
        escape(&shorten(&p.map, 110))
    );
    out += &body;
    out += "</svg>\n";
    out
}

fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Plot {
        let from = Grid {
            title: "output".into(),
            row_axis: "(row)".into(),
            col_axis: "d0".into(),
            rows: 1,
            cols: 2,
            cells: vec![vec![0], vec![1]],
            ..Grid::default()
        };
        let to = Grid {
            title: "input".into(),
            rows: 1,
            cols: 1,
            cells: vec![vec![0, 1]],
            ..from.clone()
        };
        Plot {
            map: "(d0) -> (0) <&>".into(),
            color_by: "d0".into(),
            from,
            to,
            groups: 2,
            notes: vec![],
        }
    }

    #[test]
    fn cells_are_filled_by_group_and_shared_cells_are_marked() {
        let svg = plot(&tiny());
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        // Two output cells in colours 0 and 1, one input cell read by both: outlined.
        assert_eq!(svg.matches(&format!("fill=\"{}\"", color(0))).count(), 2);
        assert_eq!(svg.matches(&format!("fill=\"{}\"", color(1))).count(), 1);
        assert_eq!(svg.matches("stroke=\"#000\"").count(), 1);
        assert!(svg.contains("(0, 0): colour 0, 1"));
        // Text is escaped.
        assert!(svg.contains("(d0) -&gt; (0) &lt;&amp;&gt;"));
    }
}
