"""The annotation page's style sheet and script, and the Content-Security-Policy that lets
only them run: they are constants, allowed by their digests, so a script that found its way
into a page anyway would not run.

The script is the page's keys: 1..9 choose the nth answer of the rubric in focus (else of the
first unanswered one) and move the focus on to the next rubric (else to the save button);
Enter sends the form in focus (the labels, or the skip from its reason box; Ctrl+Enter from a
text box); s and c go to the skip reason and the comment; b follows the link back; Esc leaves
a text box. On the queues page, 1..9 start the nth queue.
"""

from __future__ import annotations

import base64
import hashlib

STYLE = """
:root{color-scheme:light;--fg:#1b1f24;--muted:#56606b;--bg:#fff;--panel:#f3f5f8;
--line:#cfd6de;--accent:#0b57d0;--bad:#b3261e;--good:#146c2e}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:var(--fg);background:var(--bg)}
header{display:flex;flex-wrap:wrap;gap:.4rem 1rem;align-items:center;
justify-content:space-between;padding:.5rem 1rem;border-bottom:1px solid var(--line)}
header form{display:inline}
main{padding:1rem;max-width:82rem;margin:0 auto}
h1{font-size:1.3rem;margin:.2rem 0 .8rem}h2{font-size:1.05rem;margin:1.2rem 0 .4rem}
a{color:var(--accent)}
.muted,small{color:var(--muted)}
.item{display:grid;grid-template-columns:minmax(0,3fr) minmax(18rem,2fr);
grid-template-rows:auto auto 1fr;grid-template-areas:"judged judge" "verdicts judge" "trace judge";
gap:0 1.5rem;align-items:start}
.judged{grid-area:judged}.verdicts{grid-area:verdicts}.trace{grid-area:trace}
.verdicts>:last-child{margin-bottom:0}
.judge{grid-area:judge;position:sticky;top:.5rem}
.question,.answer,.reference{background:var(--panel);border-left:4px solid var(--accent);
padding:.5rem .8rem;border-radius:4px;white-space:pre-wrap;overflow-wrap:anywhere}
.reference{border-left-color:var(--good)}
ol.steps{padding-left:1.4rem}ol.steps>li{margin:.5rem 0}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--panel);padding:.4rem .6rem;
border-radius:4px;margin:.2rem 0;font-size:.85rem;max-height:18rem;overflow:auto}
.error{color:var(--bad)}
:focus-visible,input:focus,textarea:focus{outline:3px solid var(--accent);outline-offset:2px}
fieldset{border:1px solid var(--line);border-radius:6px;margin:0 0 .8rem;padding:.4rem .8rem .7rem}
fieldset:focus-within{border-color:var(--accent);box-shadow:0 0 0 1px var(--accent)}
legend{font-weight:600;padding:0 .3rem}
.answers{display:flex;flex-wrap:wrap;gap:.4rem}
.answers label{display:inline-flex;align-items:center;gap:.3rem;border:1px solid var(--line);
border-radius:4px;padding:.2rem .6rem}
.answers label:has(input:checked){border-color:var(--accent);background:var(--panel);
font-weight:600}
.answers label:has(input:focus-visible){outline:3px solid var(--accent);outline-offset:1px}
textarea,input[type=text],input[type=password]{width:100%;font:inherit;padding:.3rem .5rem;
border:1px solid var(--line);border-radius:4px}
button{font:inherit;padding:.35rem .9rem;border-radius:4px;border:1px solid var(--accent);
background:var(--accent);color:#fff;cursor:pointer}
button.quiet{background:transparent;color:var(--accent)}
button kbd{background:transparent;color:inherit;border-color:currentColor}
.row{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin:.6rem 0}
.skip{margin-top:1rem;padding-top:.6rem;border-top:1px dashed var(--line)}
kbd{font:.8rem ui-monospace,monospace;border:1px solid var(--line);border-bottom-width:2px;
border-radius:3px;padding:0 .3rem;background:var(--panel)}
.errors{border:2px solid var(--bad);color:var(--bad);padding:.4rem 1rem;border-radius:6px}
.keys{font-size:.85rem;color:var(--muted)}
table{border-collapse:collapse;width:100%;font-size:.9rem}
td,th{border-bottom:1px solid var(--line);padding:.25rem .4rem;text-align:left;
vertical-align:top}
.signin{max-width:26rem;margin:3rem auto}
@media (max-width:600px){.item{display:block}.judge{position:static;margin-top:1.2rem}
main{padding:.6rem}h1{font-size:1.15rem}}
"""

SCRIPT = """
(function () {
  "use strict";
  function typing(el) {
    if (!el || !el.tagName) return false;
    if (el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable) return true;
    return el.tagName === "INPUT" && ["radio", "checkbox", "submit", "button"].indexOf(el.type) < 0;
  }
  function groups() {
    return Array.prototype.slice.call(document.querySelectorAll("fieldset.choices"));
  }
  function rubricFor(el) {
    var here = el && el.closest ? el.closest("fieldset.choices") : null;
    if (here) return here;
    var all = groups();
    for (var i = 0; i < all.length; i++) {
      if (!all[i].querySelector("input:checked")) return all[i];
    }
    return all[0] || null;
  }
  function choose(n, el) {
    var group = rubricFor(el);
    if (!group) return false;
    var radios = group.querySelectorAll("input[type=radio]");
    if (n >= radios.length) return false;
    radios[n].checked = true;
    // on to the next rubric of the form (a choice's, or a text box), else to the save button
    var all = Array.prototype.slice.call(document.querySelectorAll("fieldset.rubric"));
    var next = all[all.indexOf(group) + 1];
    var to = next ? next.querySelector("input:checked") || next.querySelector("input, textarea")
                  : document.getElementById("save");
    if (to) to.focus();
    return true;
  }
  function focus(id) {
    var el = document.getElementById(id);
    if (el) el.focus();
    return !!el;
  }
  document.addEventListener("keydown", function (e) {
    var el = e.target;
    if (e.altKey || e.metaKey || e.isComposing) return;
    if (e.key === "Escape" && typing(el)) { el.blur(); e.preventDefault(); return; }
    if (e.key === "Enter") {
      if (el.tagName === "BUTTON" || el.tagName === "A") return;
      if (el.tagName === "TEXTAREA" && !e.ctrlKey) return;
      var form = el.form || document.getElementById("labels");
      if (form) { e.preventDefault(); form.requestSubmit(); }
      return;
    }
    if (e.ctrlKey || typing(el)) return;
    var done = false;
    if (/^[1-9]$/.test(e.key)) {
      var n = Number(e.key) - 1, starts = document.querySelectorAll("a.start");
      if (starts.length) {
        if (n < starts.length) { window.location.href = starts[n].href; done = true; }
      } else {
        done = choose(n, el);
      }
    } else if (e.key === "s") {
      done = focus("skip-reason");
    } else if (e.key === "c") {
      done = focus("comment");
    } else if (e.key === "b") {
      var back = document.getElementById("back");
      if (back) { window.location.href = back.href; done = true; }
    }
    if (done) e.preventDefault();
  });
})();
"""


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# Only this page's own style and script run; forms post to this origin only.
CSP = (
    f"default-src 'none'; style-src {_digest(STYLE)}; script-src {_digest(SCRIPT)}; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
