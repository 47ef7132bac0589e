//! A native engine for Hugging Face chat templates with content-span tracking.
//!
//! minijinja parses the template; the evaluator here runs it with the semantics of Jinja
//! on CPython (what `transformers` runs) and with the Python tracker's spans
//! (`tokenpact.chat.spans`), so its output text and content spans equal the Python
//! engine's. It either renders exactly or declines ([`value::Decline`]) and the caller
//! renders with the Python engine: constructs, values and errors it does not model
//! (including every error a template raises) decline, so it never changes a result.

pub mod ast;
mod clock;
mod eval;
mod filters;
mod ops;
pub mod pyjson;
mod strings;
pub mod value;

use std::collections::HashMap;

pub use eval::Limits;
use value::{Res, Value};

/// The modules the evaluator calls into, under one name.
mod builtins {
    pub use super::filters::{call_global, filter, test};
    pub use super::ops::{binary, get_attr, get_item, iterate, negate, slice};
    pub use super::strings::call_method;
}

/// A compiled chat template.
#[derive(Debug)]
pub struct NativeTemplate {
    body: Vec<ast::Stmt>,
    /// Names bound undefined at the start ([`ast::undefined_at_start`]).
    undefined_at_start: Vec<String>,
    /// Whether the template has `{% generation %}` blocks.
    has_generation: bool,
}

/// A render: the text and its content spans `(start, end, owner)` in code points,
/// sorted, as the Python engine reports them, and the same spans in UTF-8 bytes (what
/// the encoder needs: no second conversion of a long text); and the spans of its
/// `{% generation %}` output `(start, end)` in code points, in output order (the Python
/// engine's `generation_spans`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub text: String,
    pub spans: Vec<(usize, usize, i32)>,
    pub byte_spans: Vec<value::Span>,
    pub generation: Vec<(usize, usize)>,
}

impl NativeTemplate {
    /// Compiles `source`, or declines when it uses what this engine does not run.
    pub fn compile(source: &str) -> Res<NativeTemplate> {
        let body = ast::compile(source)?;
        let undefined_at_start = ast::undefined_at_start(&body);
        let has_generation = ast::has_generation(&body);
        Ok(NativeTemplate {
            body,
            undefined_at_start,
            has_generation,
        })
    }

    /// Whether the template marks output with `{% generation %}` blocks (then a render's
    /// [`Rendered::generation`] spans are the assistant mask's source).
    pub fn has_generation(&self) -> bool {
        self.has_generation
    }

    /// Renders with `context` (the template's variables).
    pub fn render(&self, mut context: HashMap<String, Value>, limits: Limits) -> Res<Rendered> {
        for name in &self.undefined_at_start {
            context.insert(name.clone(), Value::Undefined);
        }
        let mut out = eval::Eval::new(context, limits).run(&self.body)?;
        let mut generation = Vec::new();
        if self.has_generation {
            let (marks, content) = out
                .spans
                .into_iter()
                .partition(|&(_, _, o)| o == ast::GENERATION_OWNER);
            out.spans = content;
            generation = to_code_points(&out.text, &marks)
                .into_iter()
                .map(|(a, b, _)| (a, b))
                .collect();
        }
        // Byte and code-point offsets grow together, so sorting the byte spans sorts both.
        out.spans.sort_unstable();
        let spans = to_code_points(&out.text, &out.spans);
        Ok(Rendered {
            text: out.text,
            spans,
            byte_spans: out.spans,
            generation,
        })
    }
}

/// Byte spans as code-point spans: span ends in order, each char count taken from the
/// previous one by counting the UTF-8 lead bytes in between.
fn to_code_points(text: &str, spans: &[value::Span]) -> Vec<(usize, usize, i32)> {
    if text.is_ascii() {
        return spans
            .iter()
            .map(|&(a, b, o)| (a as usize, b as usize, o))
            .collect();
    }
    let bytes = text.as_bytes();
    let mut bounds: Vec<usize> = spans
        .iter()
        .flat_map(|&(a, b, _)| [a as usize, b as usize])
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    let (mut at, mut chars) = (0usize, 0usize);
    let points: Vec<usize> = bounds
        .iter()
        .map(|&b| {
            chars += bytes[at..b].iter().filter(|&&x| x & 0xC0 != 0x80).count();
            at = b;
            chars
        })
        .collect();
    let point = |b: u32| points[bounds.binary_search(&(b as usize)).expect("a span bound")];
    spans
        .iter()
        .map(|&(a, b, o)| (point(a), point(b), o))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(source: &str, vars: &[(&str, Value)]) -> Res<Rendered> {
        let context = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let limits = Limits {
            max_iterations: 10_000,
            max_chars: 100_000,
        };
        NativeTemplate::compile(source)?.render(context, limits)
    }

    fn owned(text: &str, owner: i32) -> Value {
        Value::sstr(value::SStr {
            text: text.to_string(),
            spans: vec![(0, text.len() as u32, owner)],
        })
    }

    #[test]
    fn generation_blocks_mark_their_output() {
        let source = "{%- for m in ms %}<u>{% generation -%}\n {{ m }}!{%- endgeneration %}\n\
                      {% endfor %}{% generation %}{% endgeneration %}";
        let out = render(
            source,
            &[(
                "ms",
                Value::List(vec![owned("hé", 0), owned("b", 1)].into()),
            )],
        )
        .unwrap();
        assert_eq!(out.text, "<u>hé!<u>b!");
        assert_eq!(out.spans, vec![(3, 5, 0), (9, 10, 1)]);
        assert_eq!(out.generation, vec![(3, 6), (9, 11)]);
        // Spans of other owners only in the encoder's byte spans.
        assert!(out.byte_spans.iter().all(|&(_, _, o)| o >= 0));
    }

    #[test]
    fn generation_tags_outside_code_are_left_to_jinja() {
        for source in [
            "{# {% generation %}{% endgeneration %} #}",
            "{{ '{% generation %}' }}{{ '{% endgeneration %}' }}",
            "{% raw %}{% generation %}{% endraw %}{% generation %}{% endgeneration %}",
            "{% filter upper|__tokenpact_generation__ %}x{% endfilter %}",
        ] {
            assert!(NativeTemplate::compile(source).is_err(), "{source}");
        }
    }

    #[test]
    fn call_blocks_pass_their_body_as_caller() {
        let source = "{% macro box(x) %}[{{ x }}{{ caller(x ~ '!') }}]{% endmacro %}\
                      {% for i in [1, 2] %}{% call(y) box(i) %}{{ y }}{{ i }}{% endcall %}{% endfor %}";
        assert_eq!(render(source, &[]).unwrap().text, "[11!1][22!2]");
        // A macro that never reads `caller` takes no call block (Jinja raises).
        assert!(render(
            "{% macro m() %}x{% endmacro %}{% call m() %}y{% endcall %}",
            &[]
        )
        .is_err());
        // Read without a call block: undefined.
        let out = render(
            "{% macro m() %}{{ caller is defined }}{% endmacro %}{{ m() }}",
            &[],
        );
        assert_eq!(out.unwrap().text, "False");
    }

    #[test]
    fn a_caller_kept_past_its_block_declines() {
        let source = "{% set ns = namespace(c=none) %}{% macro keep() %}{% set ns.c = caller %}\
                      {% endmacro %}{% for i in [1] %}{% call keep() %}{{ i }}{% endcall %}{% endfor %}\
                      {% for j in [2] %}{{ ns.c() }}{% endfor %}";
        assert!(render(source, &[]).is_err());
    }

    #[test]
    fn filter_blocks_apply_their_chain() {
        let source = "{% filter trim|upper %}  a{{ c }}  {% endfilter %}|\
                      {% set s | replace('a', 'b') %}aa{% endset %}{{ s }}";
        let out = render(source, &[("c", owned("x", 3))]).unwrap();
        assert_eq!(out.text, "AX|bb");
        assert_eq!(out.spans, vec![(1, 2, 3)]);
        assert!(render("{% filter length %}abc{% endfilter %}", &[]).is_err());
    }

    #[test]
    fn case_mapping_keeps_owners() {
        let out = render("{{ c|upper }}|{{ c|capitalize }}", &[("c", owned("ıb", 0))]).unwrap();
        assert_eq!(out.text, "IB|Ib");
        assert_eq!(out.spans, vec![(0, 2, 0), (3, 5, 0)]);
        let out = render("{{ c|upper }}", &[("c", owned("aß", 0))]).unwrap();
        assert_eq!((out.text.as_str(), out.spans), ("ASS", vec![(0, 3, 0)]));
        assert!(render("{{ c|lower }}", &[("c", owned("ꟛ", 0))]).is_err());
    }
}
