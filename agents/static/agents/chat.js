/* Athena chat page: plain JavaScript over the REST API (session cookie + CSRF token). */
(function () {
  "use strict";

  var app = document.getElementById("chat-app");
  if (!app) { return; }
  var maxChars = parseInt(app.getAttribute("data-max-chars"), 10) || 1000;
  var state = { conversationId: null, busy: false };

  function $(id) { return document.getElementById(id); }
  // Text from documents and users may be Arabic or Hebrew: each paragraph, item and text element takes its
  // direction from its own first strong letter (dir="auto"), so a right-to-left sentence reads right to left
  // with its full stop and citation marks at its end, and English text is laid out as before.
  var OWN_DIRECTION = { p: true, li: true, td: true, th: true, h3: true, a: true, mark: true, span: true, div: true };
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (OWN_DIRECTION[tag] || (attrs && "text" in attrs)) { node.setAttribute("dir", "auto"); }
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === "text") { node.textContent = attrs[key]; }
      else if (key === "className") { node.className = attrs[key]; }
      else { node.setAttribute(key, attrs[key]); }
    });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }
  function csrfToken() {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }
  function api(method, url, body, isForm) {
    return request(method, url, body, isForm).then(function (result) { return result.data; });
  }
  // the body and, where the API sends one, the X-Total-Count header (a list's size past the page it sent)
  function request(method, url, body, isForm) {
    var options = { method: method, credentials: "same-origin", headers: { "X-CSRFToken": csrfToken() } };
    if (body !== undefined) {
      if (isForm) { options.body = body; }
      else { options.body = JSON.stringify(body); options.headers["Content-Type"] = "application/json"; }
    }
    return fetch(url, options).then(function (response) {
      if (response.status === 204) { return { data: null, total: null }; }
      var total = parseInt(response.headers.get("X-Total-Count") || "", 10);
      return response.json().catch(function () { return {}; }).then(function (data) {
        if (!response.ok) {
          var message = (data && data.error && data.error.message) || ("request failed (" + response.status + ")");
          // the API's words for it ("Authentication credentials were not provided.") are not the reader's
          if (response.status === 401) { message = "You are signed out (your session ended): sign in again to go on."; }
          var error = new Error(message);
          error.status = response.status;
          error.code = data && data.error && data.error.code;
          error.details = (data && data.error && data.error.details) || {};
          throw error;
        }
        return { data: data, total: isNaN(total) ? null : total };
      });
    });
  }
  // a live region's text is written only when it changes: writing the same text again is read out again
  function setText(node, text) {
    if (node.textContent !== text) { node.textContent = text; }
  }
  function fmtDate(value) {
    if (!value) { return "unknown"; }
    var date = new Date(value);
    return isNaN(date.getTime()) ? String(value) : date.toISOString().slice(0, 10);
  }
  // a moment the reader acts on (an upload's expiry): their own date and time, named with their zone; the UTC
  // date alone was a day off for a reader west of UTC in the evening or east of it in the morning
  function fmtMoment(value) {
    if (!value) { return "unknown"; }
    var date = new Date(value);
    if (isNaN(date.getTime())) { return String(value); }
    var pad = function (n) { return ("0" + n).slice(-2); };
    var zone = "";
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + " " +
      pad(date.getHours()) + ":" + pad(date.getMinutes()) + (zone ? " (" + zone + ")" : "");
  }

  /* ---- ask box ---------------------------------------------------------------------------------------- */
  var question = $("question");
  function updateCounter() {
    var n = question.value.length;
    $("char-counter").textContent = n + " / " + maxChars;
    $("char-counter").className = "small " + (n >= maxChars ? "error" : n > maxChars * 0.9 ? "warn" : "muted");
  }
  question.addEventListener("input", updateCounter);
  question.addEventListener("keydown", function (event) {
    // Enter asks; Shift+Enter starts a new line; an input method composing a character keeps its Enter
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("ask-form").requestSubmit();
    }
  });

  var progressTimer = null;
  var queueTimer = null;
  // "N questions ahead of yours, about S s": the caller's own place in the answering queue
  // (GET /api/v1/ask/queue), polled while the ask is outstanding. With nothing ahead, a wait means every
  // answering process is busy with documents being indexed (an embed or parse task), which it finishes first;
  // empty when nothing holds the question back
  function queueText(position) {
    if (!position) { return ""; }
    var known = position.expected_wait_seconds !== null && position.expected_wait_seconds !== undefined;
    var seconds = known ? Math.max(1, Math.ceil(Number(position.expected_wait_seconds))) : 0;
    if (!position.ahead) {
      return known && Number(position.expected_wait_seconds) >= 1 ?
        "Documents are being indexed; yours starts in about " + seconds + " s" : "";
    }
    var text = position.ahead + (position.ahead === 1 ? " question" : " questions") + " ahead of yours";
    return known ? text + ", about " + seconds + " s" : text;
  }
  function setBusy(busy) {
    state.busy = busy;
    state.queue = "";
    state.asking = (state.asking || 0) + 1;  // a poll answered after its ask ended is ignored
    var asking = state.asking;
    $("ask-submit").disabled = busy;
    $("progress").hidden = !busy;
    if (progressTimer) { clearInterval(progressTimer); progressTimer = null; }
    if (queueTimer) { clearTimeout(queueTimer); queueTimer = null; }
    if (busy) {
      // durations on the monotonic clock: a wall clock stepped while waiting (NTP, a laptop resumed) counted
      // negative seconds, or gave up on an upload at once
      var started = performance.now();
      var steps = ["Checking the question…", "Searching the documents…", "Weighing the evidence…",
                   "Composing a cited answer…"];
      setText($("progress-text"), steps[0]);
      setText($("progress-seconds"), "");
      // #progress is a live region: a screen reader reads each change of its text, so the text changes with
      // the step or the place in the queue, and the seconds counting beside it are shown but not read out
      var render = function () {
        var seconds = (performance.now() - started) / 1000;
        var step = steps[Math.min(steps.length - 1, Math.floor(seconds / 1.5))];
        setText($("progress-text"), state.queue || step);
        setText($("progress-seconds"), state.queue ? "" : " " + seconds.toFixed(0) + " s");
      };
      progressTimer = setInterval(render, 500);
      var poll = function () {
        api("GET", "/api/v1/ask/queue").then(function (position) {
          if (state.asking === asking) { state.queue = queueText(position); render(); }
        }).catch(function () { /* only a hint: the ask itself reports what went wrong */ }).then(function () {
          if (state.asking === asking) { queueTimer = setTimeout(poll, 1000); }
        });
      };
      queueTimer = setTimeout(poll, 300);
    }
  }

  $("ask-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var text = question.value.trim();
    if (!text || state.busy) { return; }
    if (text.length > maxChars) { showError("Questions are limited to " + maxChars + " characters."); return; }
    showError("");
    setBusy(true);
    var pending = pendingTurn(text);
    var body = { question: text };
    if (state.conversationId) { body.conversation_id = state.conversationId; }
    api("POST", "/api/v1/ask", body).then(function (data) {
      state.conversationId = data.conversation_id || state.conversationId;
      pending.remove();
      renderTurn(text, data, data.answer_id, null);
      question.value = "";
      updateCounter();
      loadConversations();
    }).catch(function (error) {
      pending.remove();
      // nothing was answered: an empty thread shows its welcome text again
      if ($("welcome") && !document.querySelector("#thread .turn")) { $("welcome").hidden = false; }
      if (error.status === 401) {
        draftKeep(text);
        showError(errorText(error), { href: "/accounts/login/?next=/", text: "Sign in again" });
      } else {
        showError(errorText(error));
      }
    }).then(function () { setBusy(false); question.focus(); });
  });

  function pendingTurn(text) {
    var welcome = $("welcome");
    if (welcome) { welcome.hidden = true; }
    var turn = el("article", { className: "turn pending", "aria-busy": "true" }, [
      el("div", { className: "question-bubble", text: text }),
      el("div", { className: "answer working" }, [el("span", { className: "spinner", "aria-hidden": "true" }),
        el("span", { text: " Athena is reading the documents you can see…" })])
    ]);
    $("thread").appendChild(turn);
    turn.scrollIntoView({ block: "end" });
    return turn;
  }

  function clock(date) {
    return ("0" + date.getHours()).slice(-2) + ":" + ("0" + date.getMinutes()).slice(-2);
  }

  function errorText(error) {
    if (error.code === "too_many_in_flight") {
      var wait = Number((error.details && error.details.retry_after) || 0);
      return "You already have " + (error.details.in_flight || "several") + " questions waiting for an answer. " +
        "Ask again when one is answered" + (wait ? " (about " + wait + " s)." : ".");
    }
    if (error.code === "overloaded") {
      var ahead = error.details && error.details.ahead;
      var queued = Number((error.details && error.details.expected_wait_seconds) || 0);
      return "Athena is busy: " + (ahead ? ahead + " questions are waiting, about " + Math.ceil(queued) + " s. "
                                          : "many questions are waiting. ") +
        "Please try again in a few seconds.";
    }
    if (error.status === 429 && error.details && error.details.retry_after) {
      var seconds = Number(error.details.retry_after);
      var when = new Date(Date.now() + seconds * 1000);
      var limit = error.details.limit;
      return (limit ? "You have asked " + limit + " questions this hour, the most allowed. "
                    : "Questions are paused for your account. ") +
        "You can ask again at " + clock(when) + " (in " + Math.max(1, Math.ceil(seconds / 60)) + " min).";
    }
    if (error.status === 503) {
      return "Athena is busy: no answering worker took the question in time. Please try again in a minute; " +
        "if this keeps happening, tell the administrators.";
    }
    if (error.status === 401) {
      return "You are signed out (your session ended). Your question is kept: it will be in the box again " +
        "after you sign in.";
    }
    if (!error.status) { return "The server could not be reached. Check your connection and try again."; }
    return error.message;
  }

  function showError(message, link) {
    $("ask-error").textContent = message;
    if (link) {
      $("ask-error").appendChild(document.createTextNode(" "));
      $("ask-error").appendChild(el("a", { href: link.href, id: "ask-error-link", text: link.text }));
    }
    $("ask-error").hidden = !message;
  }

  // A question typed when the session had ended waits in this tab's sessionStorage, under the signed-in
  // user's name (another user signing in here does not get it), until that user is back on the page
  var draftKey = "athena.unsent-question:" + (($("who") || {}).textContent || "");
  function draftKeep(text) {
    try { window.sessionStorage.setItem(draftKey, text); } catch (e) { /* storage off: the box still holds it */ }
  }
  function draftRestore() {
    var text = null;
    try {
      text = window.sessionStorage.getItem(draftKey);
      window.sessionStorage.removeItem(draftKey);
    } catch (e) { return; }
    if (text && !question.value) { question.value = text; }
  }

  /* ---- rendering an answer ------------------------------------------------------------------------------ */
  function citeLink(citation, turn) {
    var link = el("a", { href: "#", className: "cite", "data-ref": String(citation.ref), text: "[" + citation.ref + "]",
                         "aria-label": "Source " + citation.ref + ": " + (citation.title || citation.document) +
                           (citation.section ? ", " + citation.section : "") });
    link.addEventListener("click", function (e) { e.preventDefault(); openCitation(citation, turn, link); });
    return link;
  }

  // text with its [n] markers turned into links that open the cited passage
  function appendWithCitations(node, text, byRef, turn) {
    var pattern = /\[(\d+)\]/g;
    var last = 0;
    var match;
    while ((match = pattern.exec(text)) !== null) {
      node.appendChild(document.createTextNode(text.slice(last, match.index)));
      var citation = byRef[match[1]];
      node.appendChild(citation ? citeLink(citation, turn) : document.createTextNode(match[0]));
      last = pattern.lastIndex;
    }
    node.appendChild(document.createTextNode(text.slice(last)));
    return node;
  }

  // the first sentence (with its citations) and the rest of a paragraph: an answer's sentences each end with
  // their [n]; text without citations (an abstention) is split at its first full stop
  function leadSplit(line) {
    var match = /^(.+?\[\d+\](?:\s*\[\d+\])*)\s+(\S[\s\S]*)$/.exec(line) ||
      (/\[\d+\]/.test(line) ? null : /^(.+?[.!?])\s+(\S[\s\S]*)$/.exec(line));
    return match ? [match[1], match[2]] : [line, ""];
  }

  // "From <document title>:" before a fragment names a source that the list under the answer names once, and
  // the [n] after each sentence already says which one it is: the page leaves the label out
  function withoutSourceLabels(text, citations) {
    var titles = [];
    (citations || []).forEach(function (c) {
      [c.title, c.document].forEach(function (t) { if (t && titles.indexOf(t) < 0) { titles.push(t); } });
    });
    titles.sort(function (a, b) { return b.length - a.length; });
    titles.forEach(function (title) {
      text = text.replace(new RegExp("(^|\\s)([-\u2022]\\s+)?From " + escapeRegExp(title) + ":[ \\t]*", "g"),
        function (all, before, bullet) { return before + (bullet || ""); });
    });
    return text;
  }

  function escapeRegExp(text) { return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

  // A quoted sentence can carry the heading above it ("Rollback after commit If a problem appears"): the
  // heading is in the source list already, so a heading of a cited section glued to the start of a sentence
  // (the sentence going on with a capital letter, no punctuation between) is left out
  function withoutGluedHeadings(text, citations) {
    var headings = [];
    (citations || []).forEach(function (c) {
      [c.title].concat(String(c.section || "").split(" > ")).forEach(function (h) {
        h = (h || "").trim();
        if (h && h.split(/\s+/).length <= 12 && headings.indexOf(h) < 0) { headings.push(h); }
      });
    });
    headings.sort(function (a, b) { return b.length - a.length; });
    headings.forEach(function (heading) {
      var pattern = new RegExp("(^|\\n|\\]\\s+|^\\s*\\d+[.)]\\s+|\\n\\s*\\d+[.)]\\s+|[-\u2022]\\s+)" +
                               escapeRegExp(heading) + "[ \\t]+(?=[A-Z0-9`])", "g");
      text = text.replace(pattern, "$1");
    });
    return text;
  }

  // an answer keeps a snippet's lines as lines indented by four spaces (agents/layout.py)
  var CODE_LINE = /^ {4}/;
  var CLOSING_CITATIONS = /(?:\s*\[\d+\])+\s*$/;

  // the [n] markers that end a code line and are the answer's citations ("listen = [8080] [1]": only "[1]")
  function closingCitations(line, byRef) {
    var found = CLOSING_CITATIONS.exec(line);
    if (!found) { return null; }
    var index = found.index;
    var markers = found[0].match(/\s*\[\d+\]/g);
    while (markers.length && !byRef[/\d+/.exec(markers[0])[0]]) { index += markers.shift().length; }
    return markers.length ? { index: index, text: markers.join("") } : null;
  }

  // the code as a block to read and copy; the citations that end its last line stay out of it
  function codeBlock(lines, byRef, turn) {
    var last = lines[lines.length - 1];
    var cites = closingCitations(last, byRef);
    var body = lines.slice(0, -1).concat([cites ? last.slice(0, cites.index) : last])
      .map(function (line) { return line.slice(4); });
    var nodes = [el("pre", { className: "answer-code" }, [el("code", { text: body.join("\n") })])];
    if (cites) { nodes.push(appendWithCitations(el("p", { className: "code-cites" }), cites.text.trim(), byRef, turn)); }
    return nodes;
  }

  function answerBlocks(text, citations, turn) {
    var container = el("div", { className: "answer-text" });
    var byRef = {};
    (citations || []).forEach(function (c) { byRef[String(c.ref)] = c; });
    var lines = withoutGluedHeadings(withoutSourceLabels(text, citations), citations).split("\n")
      .filter(function (line) { return line.trim(); });
    var list = null;
    var hasLead = false;
    var code = [];
    var item = null;  // the list item a code block went into: the text after the block is still that item's
    lines.forEach(function (line, at) {
      if (CODE_LINE.test(line)) {
        // a block ends at its sentence's citation (two sentences of code are two blocks, each cited), goes inside
        // the list item it follows, and counts as the lead when it opens the answer
        code.push(line);
        if (at + 1 >= lines.length || !CODE_LINE.test(lines[at + 1]) || closingCitations(line, byRef)) {
          item = list ? list.lastChild : null;
          codeBlock(code, byRef, turn).forEach(function (node) { (item || container).appendChild(node); });
          code = [];
          hasLead = true;
        }
        return;
      }
      var step = /^\s*\d+[.)]\s+([\s\S]*)$/.exec(line);
      var point = /^\s*[-\u2022]\s+([\s\S]*)$/.exec(line);
      if (step || point) {
        var tag = step ? "ol" : "ul";
        if (!list || list.tagName.toLowerCase() !== tag) {
          if (!hasLead && step) {
            // a bare list of steps gets a lead line saying what it is
            var count = lines.filter(function (l) { return /^\s*\d+[.)]\s/.test(l); }).length;
            var first = (citations || [])[0];
            container.appendChild(el("p", { className: "answer-lead",
              text: count + " steps" + (first ? ", from " + (first.title || first.document) : "") + ":" }));
            hasLead = true;
          }
          list = el(tag, { className: step ? "steps" : "points" });
          container.appendChild(list);
        }
        list.appendChild(appendWithCitations(el("li"), (step || point)[1], byRef, turn));
        item = null;
        return;
      }
      if (item) {
        item.appendChild(appendWithCitations(el("p"), line, byRef, turn));
        return;
      }
      list = null;
      if (!hasLead) {
        var parts = leadSplit(line);
        container.appendChild(appendWithCitations(el("p", { className: "answer-lead" }), parts[0], byRef, turn));
        if (parts[1]) { container.appendChild(appendWithCitations(el("p"), parts[1], byRef, turn)); }
        hasLead = true;
      } else {
        container.appendChild(appendWithCitations(el("p"), line, byRef, turn));
      }
    });
    return container;
  }

  // one entry per document, however many of its passages are cited
  function sourceList(citations, notes, turn) {
    var groups = [];
    var byDocument = {};
    citations.forEach(function (c) {
      var group = byDocument[c.document];
      if (!group) {
        group = byDocument[c.document] = { title: c.title || c.document, document: c.document, cites: [], sections: [] };
        groups.push(group);
      }
      group.cites.push(c);
      if (c.section && group.sections.indexOf(c.section) < 0) { group.sections.push(c.section); }
    });
    var list = el("ul", { className: "sources", "aria-label": "Sources" });
    groups.forEach(function (group) {
      var first = group.cites[0];
      var refs = el("span", { className: "source-refs" });
      group.cites.forEach(function (c) { refs.appendChild(citeLink(c, turn)); });
      var title = el("a", { href: "#", className: "source-title", text: group.title });
      title.addEventListener("click", function (e) { e.preventDefault(); openCitation(first, turn, title); });
      var meta = el("div", { className: "source-meta small" }, [
        el("span", { className: "source-section", text: group.sections.join(" · ") || "whole document" }),
        el("span", { className: "source-updated", text: "updated " + fmtDate(first.updated_at) }),
        el("span", { className: "tier tier-" + (first.access_tier || "unknown"), text: first.access_tier || "unknown" })
      ]);
      var stale = (notes || []).filter(function (n) {
        n = String(n);
        return /may be outdated/.test(n) && (n.indexOf("'" + group.title + "'") === 0 || n.indexOf("'" + group.document + "'") === 0);
      });
      if (stale.length) {
        meta.appendChild(el("span", { className: "badge-outdated", text: "may be outdated", title: stale.join(" ") }));
      }
      list.appendChild(el("li", { "data-document": group.document }, [refs, " ", title, meta]));
    });
    return list;
  }

  function renderTurn(askedText, data, answerId, vote) {
    var welcome = $("welcome");
    if (welcome) { welcome.remove(); }
    var turn = el("article", { className: "turn answered" + (data.abstained ? " abstained" : ""),
                               "data-answer-id": answerId || "" });
    turn.appendChild(el("div", { className: "question-bubble", text: askedText }));
    var answerBox = el("div", { className: "answer" });
    if (data.withheld) {
      // a past answer from documents the asker can no longer read: the server sent nothing of them, and there
      // is nothing left to show, cite, inspect or vote on
      turn.classList.add("withheld");
      answerBox.appendChild(el("p", { className: "refusal-label", text: "Withheld" }));
      answerBox.appendChild(el("p", { className: "answer-text withheld-text", text: data.answer || "" }));
      showTurn(turn, answerBox, data);
      return;
    }
    answerBox.appendChild(answerBlocks(data.answer || "", data.citations, turn));
    var refused = data.verdict === "blocked";
    if (refused) {
      turn.classList.add("refused");
      answerBox.insertBefore(el("p", { className: "refusal-label", text: "Not answered" }), answerBox.firstChild);
    } else if (data.abstained) {
      var searched = el("div", { className: "searched" }, [el("strong", { text: "What was searched: " })]);
      var notes = (data.notes || []).slice();
      if (data.retrieved && data.retrieved.length) {
        notes.push("closest documents: " + data.retrieved.slice(0, 5).join(", "));
      } else {
        notes.push("no passage you can read matched the question");
      }
      var list = el("ul");
      notes.forEach(function (n) { list.appendChild(el("li", { text: String(n) })); });
      searched.appendChild(list);
      answerBox.appendChild(searched);
    } else if (data.notes && data.notes.length) {
      var noteList = el("ul", { className: "notes" });
      data.notes.forEach(function (n) { noteList.appendChild(el("li", { text: String(n) })); });
      answerBox.appendChild(noteList);
    }
    if (data.citations && data.citations.length) {
      answerBox.appendChild(el("h3", { className: "sources-heading", text: "Sources" }));
      answerBox.appendChild(sourceList(data.citations, data.notes, turn));
    }
    var meta = el("div", { className: "small muted meta" });
    var total = data.timings_ms && (data.timings_ms.total || data.timings_ms.total_ms);
    meta.textContent = (data.template ? data.template.replace(/_/g, " ") + " · " : "") +
      (data.attribution_score !== null && data.attribution_score !== undefined ?
        "attribution " + Number(data.attribution_score).toFixed(2) + " · " : "") +
      (total ? Math.round(total) + " ms" : "");
    var showEvidence = el("button", { type: "button", className: "link show-evidence", text: "evidence" });
    showEvidence.addEventListener("click", function () { renderEvidence(data); selectTab("evidence"); });
    var showTrace = el("button", { type: "button", className: "link show-trace", text: "trace" });
    showTrace.addEventListener("click", function () { renderTrace(data); selectTab("trace"); });
    meta.appendChild(document.createTextNode(" · "));
    meta.appendChild(showEvidence);
    meta.appendChild(document.createTextNode(" · "));
    meta.appendChild(showTrace);
    answerBox.appendChild(meta);
    if (answerId) { answerBox.appendChild(feedbackBox(answerId, vote)); }
    showTurn(turn, answerBox, data);
  }

  function showTurn(turn, answerBox, data) {
    turn.appendChild(answerBox);
    $("thread").appendChild(turn);
    // an answer is read from its start: the question and the lead sentence come into view first
    turn.scrollIntoView({ block: "start" });
    renderEvidence(data);
    renderTrace(data);
  }

  function feedbackBox(answerId, vote) {
    var box = el("div", { className: "feedback" });
    var up = el("button", { type: "button", className: "vote up" + (vote === 1 ? " chosen" : ""),
                            "aria-pressed": String(vote === 1), text: "▲ helpful" });
    var down = el("button", { type: "button", className: "vote down" + (vote === -1 ? " chosen" : ""),
                              "aria-pressed": String(vote === -1), text: "▼ not helpful" });
    var comment = el("input", { type: "text", className: "feedback-comment", maxlength: "2000",
                                "aria-label": "Comment on this answer (optional)",
                                placeholder: "Optional comment (what was wrong or missing?)" });
    var status = el("span", { className: "small muted feedback-status", role: "status" });
    function send(choice) {
      // an empty box sends no comment: a vote changed after a reload keeps the comment given before
      var body = comment.value.trim() ? { vote: choice, comment: comment.value } : { vote: choice };
      api("POST", "/api/v1/answers/" + answerId + "/feedback", body)
        .then(function (data) {
          up.classList.toggle("chosen", choice === "up");
          down.classList.toggle("chosen", choice === "down");
          up.setAttribute("aria-pressed", String(choice === "up"));
          down.setAttribute("aria-pressed", String(choice === "down"));
          status.textContent = "Thanks — feedback recorded" + (data.queued_for_curation ? " and sent to the curators." : ".");
        }).catch(function (error) { status.textContent = error.message; });
    }
    up.addEventListener("click", function () { send("up"); });
    down.addEventListener("click", function () { send("down"); });
    box.appendChild(up); box.appendChild(down); box.appendChild(comment); box.appendChild(status);
    return box;
  }

  /* ---- side panel ---------------------------------------------------------------------------------------- */
  function selectTab(name) {
    Array.prototype.forEach.call(document.querySelectorAll(".tab"), function (tab) {
      var selected = tab.getAttribute("data-tab") === name;
      tab.classList.toggle("active", selected);
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
    });
    ["passage", "evidence", "trace"].forEach(function (n) { $("panel-" + n).hidden = n !== name; });
  }
  var tabNames = ["passage", "evidence", "trace"];
  Array.prototype.forEach.call(document.querySelectorAll(".tab"), function (tab) {
    tab.addEventListener("click", function () { selectTab(tab.getAttribute("data-tab")); });
    tab.addEventListener("keydown", function (event) {
      // arrow keys move between the tabs (the WAI-ARIA tabs pattern)
      var step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
      if (!step) { return; }
      var next = tabNames[(tabNames.indexOf(tab.getAttribute("data-tab")) + step + tabNames.length) % tabNames.length];
      selectTab(next);
      $("tab-" + next).focus();
    });
  });

  // A parsed table reaches a passage as lines of "cell | cell" (a bar between spaces or at a line's edge
  // separates cells), its header rows closed by a rule line "--- | ---". Neighbouring lines with as many cells
  // are shown as a table when a rule line marks their header, or when every row starts with a label
  // ("Default: | 5"); other lines with bars (a shell pipeline) stay text.
  var BAR = /(?:^|\s)\|(?=\s|$)/g;
  var RULE = /^\|? *:?-{3,}:? *(?:\| *:?-{3,}:? *)*\|?$/;

  function cellsOf(line) {
    return line.trim().split(BAR).map(function (c) { return c.trim(); });
  }

  // a table's rows, without a first or last column that is empty in every row ("| a | b |" lines)
  function tableOf(group, rule) {
    var rows = [];
    group.forEach(function (l, n) {
      if (n !== rule) { rows.push({ start: l.start, end: l.end, cells: cellsOf(l.text), header: n < rule }); }
    });
    [0, -1].forEach(function (edge) {
      var empty = rows.every(function (r) { return r.cells.length > 1 && r.cells[edge < 0 ? r.cells.length - 1 : 0] === ""; });
      if (empty) { rows.forEach(function (r) { if (edge < 0) { r.cells.pop(); } else { r.cells.shift(); } }); }
    });
    return { table: true, rows: rows };
  }

  // the passage as blocks: {table: false, code: false, start, end}, {code: true, start, end} for a run of the
  // lines its format marks as code (`codeLines`, their numbers from 0), or {table: true, rows: [{start, end,
  // cells, header}]}. Only the line right above a rule line is its table's header; a second rule line starts
  // another table (with the line above it as header); lines before the first header are text.
  function passageBlocks(text, codeLines) {
    var code = {};
    (codeLines || []).forEach(function (n) { code[n] = true; });
    var lines = [];
    var at = 0;
    text.split("\n").forEach(function (line, n) {
      lines.push({ start: at, end: at + line.length, text: line, bars: code[n] ? 0 : (line.match(BAR) || []).length,
                   code: !!code[n] });
      at += line.length + 1;
    });
    // a blank line between two code lines is part of the code (a listing's empty line)
    lines.forEach(function (l, n) {
      if (l.code || l.text.trim()) { return; }
      var before = n - 1;
      var after = n + 1;
      while (before >= 0 && !lines[before].text.trim()) { before -= 1; }
      while (after < lines.length && !lines[after].text.trim()) { after += 1; }
      if (before >= 0 && after < lines.length && lines[before].code && lines[after].code) { l.code = true; }
    });
    var blocks = [];
    function addText(group) {
      group.forEach(function (l) {
        var last = blocks[blocks.length - 1];
        if (last && !last.table && !last.code) { last.end = l.end; } else { blocks.push({ table: false, start: l.start, end: l.end }); }
      });
    }
    var k = 0;
    while (k < lines.length) {
      var j = k;
      if (lines[k].code) {
        while (j + 1 < lines.length && lines[j + 1].code) { j += 1; }
        blocks.push({ code: true, start: lines[k].start, end: lines[j].end });
        k = j + 1;
        continue;
      }
      while (lines[k].bars > 0 && j + 1 < lines.length && lines[j + 1].bars === lines[k].bars) { j += 1; }
      var group = lines.slice(k, j + 1);
      var rules = [];
      group.forEach(function (l, n) { if (RULE.test(l.text.trim())) { rules.push(n); } });
      var labelled = group.every(function (l) { return /:$/.test(cellsOf(l.text)[0]); });
      if (group.length > 1 && rules.length) {
        var starts = rules.map(function (r) { return Math.max(r - 1, 0); });
        addText(group.slice(0, starts[0]));
        starts.forEach(function (start, t) {
          var end = t + 1 < starts.length ? starts[t + 1] : group.length;
          blocks.push(tableOf(group.slice(start, end), rules[t] - start));
        });
      } else if (group.length > 1 && labelled) {
        blocks.push(tableOf(group, -1));
      } else {
        addText(group);
      }
      k = j + 1;
    }
    return blocks;
  }

  // text[start, end) with the part inside [from, to) marked
  function appendMarked(node, text, start, end, from, to) {
    var a = Math.max(start, from);
    var b = Math.min(end, to);
    if (a >= b) { node.appendChild(document.createTextNode(text.slice(start, end))); return; }
    node.appendChild(document.createTextNode(text.slice(start, a)));
    node.appendChild(el("mark", { className: "quote", text: text.slice(a, b) }));
    node.appendChild(document.createTextNode(text.slice(b, end)));
  }

  function highlighted(text, quote, codeLines) {
    var box = el("div", { className: "passage-text" });
    var index = quote ? text.indexOf(quote) : -1;
    var length = quote ? quote.length : 0;
    if (index < 0 && quote) {
      // tolerate whitespace, case and markup (backticks, emphasis) differences between quote and passage
      var words = quote.split(/[\s`*_]+/).filter(Boolean).map(function (w) {
        return w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      });
      var found = words.length ? new RegExp(words.join("[\\s`*_]+"), "i").exec(text) : null;
      if (found) { index = found.index; length = found[0].length; }
    }
    var from = index < 0 ? -1 : index;
    var to = index < 0 ? -1 : index + length;
    passageBlocks(text, codeLines).forEach(function (block, n, blocks) {
      if (block.code) {
        var code = el("code");
        appendMarked(code, text, block.start, block.end, from, to);
        box.appendChild(el("pre", { className: "passage-code" }, [code]));
        return;
      }
      if (!block.table) {
        // the line break after a text block that a table or code follows is that block's own edge
        var end = n + 1 < blocks.length && text.charAt(block.end) === "\n" ? block.end : block.end + 1;
        appendMarked(box, text, block.start, Math.min(end, text.length), from, to);
        return;
      }
      var table = el("table", { className: "passage-table" });
      var body = el("tbody");
      block.rows.forEach(function (row) {
        var quoted = from < row.end && to > row.start;
        var tr = el("tr", quoted ? { className: "quote" } : {});
        row.cells.forEach(function (cell) {
          var td = row.header ? el("th", { scope: "col" }) : el("td");
          if (quoted) { td.appendChild(el("mark", { className: "quote", text: cell })); } else { td.textContent = cell; }
          tr.appendChild(td);
        });
        (row.header ? (table.tHead || table.createTHead()) : body).appendChild(tr);
      });
      table.appendChild(body);
      box.appendChild(el("div", { className: "passage-table-scroll", role: "group", tabindex: "0",
                                  "aria-label": "Table from the passage" }, [table]));
    });
    if (index < 0 && quote) { box.appendChild(el("p", {}, [el("strong", { text: "Quoted: " }), el("mark", { text: quote })])); }
    return box;
  }

  // The passage opens in the side panel, which on a narrow screen is below the whole thread: once it has
  // loaded, its heading takes the focus (so the page scrolls to it and a screen reader reads it), unless the
  // reader has gone elsewhere meanwhile; "Back to the answer" returns to the citation that opened it.
  var opening = 0;
  function openCitation(citation, turn, origin) {
    selectTab("passage");
    var panel = $("panel-passage");
    var opened = opening += 1;
    panel.innerHTML = "";
    panel.appendChild(el("p", { className: "muted", text: "Loading passage…" }));
    api("GET", "/api/v1/passages/" + citation.chunk_id).then(function (data) {
      if (opened !== opening) { return; }  // another citation was opened since
      panel.innerHTML = "";
      var doc = data.document;
      if (origin) {
        var back = el("button", { type: "button", className: "link back-to-answer", text: "← Back to the answer" });
        back.addEventListener("click", function () {
          if (document.body.contains(origin)) { origin.focus(); } else { question.focus(); }
        });
        panel.appendChild(el("p", {}, [back]));
      }
      var heading = el("h3", { className: "passage-title", tabindex: "-1",
                               text: "[" + citation.ref + "] " + doc.title });
      panel.appendChild(heading);
      var dl = el("dl", { className: "doc-meta" });
      [["Document", doc.source], ["Section", data.section || "—"], ["Page", data.page || "—"],
       ["Last updated", fmtDate(doc.updated_at)], ["Access tier", doc.access_tier], ["Type", doc.doc_type],
       ["Version", doc.version]].forEach(function (row) {
        dl.appendChild(el("dt", { text: row[0] })); dl.appendChild(el("dd", { text: String(row[1]) }));
      });
      if (doc.superseded) { dl.appendChild(el("dd", { className: "warn", text: "This document has been superseded." })); }
      panel.appendChild(dl);
      panel.appendChild(highlighted(data.text, citation.quote, data.code_lines));
      if (doc.sections && doc.sections.length) {
        var sections = el("details", {}, [el("summary", { text: "Sections of this document (" + doc.sections.length + ")" })]);
        var list = el("ul", { className: "small" });
        doc.sections.forEach(function (s) { list.appendChild(el("li", { text: s })); });
        sections.appendChild(list);
        panel.appendChild(sections);
      }
      var active = document.activeElement;
      if (!active || active === document.body || active === origin || active === $("tab-passage")) {
        heading.focus();
      }
    }).catch(function (error) {
      if (opened !== opening) { return; }
      panel.innerHTML = "";
      panel.appendChild(el("p", { className: "error", text: error.message }));
    });
  }

  function renderEvidence(data) {
    var panel = $("panel-evidence");
    panel.innerHTML = "";
    var evidence = data.evidence || [];
    if (!evidence.length) { panel.appendChild(el("p", { className: "muted", text: "No evidence was retrieved." })); return; }
    var sourceNames = {};
    evidence.forEach(function (e) { Object.keys(e.scores || {}).forEach(function (k) { sourceNames[k] = true; }); });
    var names = Object.keys(sourceNames).sort();
    var head = el("tr", {}, [el("th", { text: "#" }), el("th", { text: "Passage" }), el("th", { text: "score" })]
      .concat(names.map(function (n) { return el("th", { text: n }); })));
    var table = el("table", { className: "evidence-table" }, [el("thead", {}, [head])]);
    var body = el("tbody");
    evidence.forEach(function (e, i) {
      var label = (e.title || e.document || e.source || "") + (e.section ? " — " + e.section : "");
      var cells = [el("td", { text: String(i + 1) }), el("td", { text: label }),
                   el("td", { text: e.score !== undefined && e.score !== null ? Number(e.score).toFixed(3) : "" })];
      names.forEach(function (n) {
        var v = (e.scores || {})[n];
        cells.push(el("td", { text: v !== undefined && v !== null ? Number(v).toFixed(3) : "—" }));
      });
      body.appendChild(el("tr", {}, cells));
    });
    table.appendChild(body);
    panel.appendChild(table);
  }

  function renderTrace(data) {
    var panel = $("panel-trace");
    panel.innerHTML = "";
    var trace = data.trace || [];
    if (!trace.length) { panel.appendChild(el("p", { className: "muted", text: "No trace." })); return; }
    var table = el("table", { className: "trace-table" }, [el("thead", {}, [el("tr", {}, [
      el("th", { text: "step" }), el("th", { text: "decision" }), el("th", { text: "ms" })])])]);
    var body = el("tbody");
    trace.forEach(function (t) {
      body.appendChild(el("tr", {}, [el("td", { text: t.step }), el("td", { text: String(t.decision || "") }),
        el("td", { className: "num", text: t.ms !== undefined ? Number(t.ms).toFixed(1) : "" })]));
    });
    table.appendChild(body);
    panel.appendChild(table);
  }

  /* ---- conversations ------------------------------------------------------------------------------------- */
  // The list is drawn anew after a conversation is opened, asked in or deleted. A keyboard user whose focus was
  // in it keeps it there: on the same conversation's link, or (that one deleted) on the link now in its place,
  // or on "New conversation" when the list is empty; the focus is not dropped to the page's start.
  function focusInList(list) {
    var active = document.activeElement;
    if (!active || !list.contains(active) || !active.closest("li")) { return null; }
    var item = active.closest("li");
    return { id: item.getAttribute("data-conversation"), index: Array.prototype.indexOf.call(list.children, item) };
  }
  function focusRestore(list, where) {
    if (!where) { return; }
    var links = list.querySelectorAll("a.conversation-link");
    var same = list.querySelector("li[data-conversation='" + where.id + "'] a.conversation-link");
    var target = same || links[Math.min(where.index, links.length - 1)] || $("new-conversation");
    target.focus();
  }
  function loadConversations() {
    api("GET", "/api/v1/conversations").then(function (items) {
      var list = $("conversation-list");
      var focused = focusInList(list);
      list.innerHTML = "";
      if (!items.length) { list.appendChild(el("li", { className: "muted", text: "No conversations yet." })); }
      items.forEach(function (c) {
        var title = (c.title || "").replace(/[\s\u200b-\u200d\u2060\ufeff]+/g, " ").trim() || "(untitled)";
        var open = el("a", { href: "#", className: "conversation-link" + (c.id === state.conversationId ? " current" : ""),
                             text: title, title: fmtDate(c.updated_at) + " · " + c.turns + " question(s)" });
        open.addEventListener("click", function (e) { e.preventDefault(); openConversation(c.id); });
        var remove = el("button", { type: "button", className: "link delete", title: "Delete conversation",
                                   "aria-label": "Delete conversation " + title, text: "×" });
        remove.addEventListener("click", function () {
          if (!window.confirm("Delete this conversation?")) { return; }
          api("DELETE", "/api/v1/conversations/" + c.id).then(function () {
            if (state.conversationId === c.id) { newConversation(); }
            loadConversations();
          }).catch(function (error) { showError(error.message); });
        });
        list.appendChild(el("li", { "data-conversation": String(c.id) }, [open, remove]));
      });
      focusRestore(list, focused);
    }).catch(function () {
      // the list is a convenience; asking still works
      var list = $("conversation-list");
      list.innerHTML = "";
      list.appendChild(el("li", { className: "muted", text: "Conversations could not be loaded." }));
    });
  }

  // The thread is a live region so that a new answer is read out as it arrives. A conversation opened from the
  // list is drawn whole (up to its newest 200 turns): it is drawn with the region off, or a screen reader would
  // read every turn, and a status line says what was opened instead.
  function drawQuietly(draw) {
    var thread = $("thread");
    thread.setAttribute("aria-live", "off");
    try { draw(); } finally {
      // on again once the browser has taken the drawing in, so that switching it on announces nothing
      setTimeout(function () { thread.setAttribute("aria-live", "polite"); }, 300);
    }
  }

  // A conversation's history comes in pages of its newest turns (HISTORY_PAGE at a time, the API's default): the
  // page draws the newest and offers the earlier ones above them, a page per press.
  var HISTORY_PAGE = 200;
  function drawTurns(turns) {
    turns.forEach(function (turn) { renderTurn(turn.question, turn.response || {}, turn.answer_id, turn.vote); });
  }
  function offerEarlier(shown, total) {
    var button = $("earlier-turns");
    var left = total === null ? 0 : total - shown;
    button.hidden = left <= 0;
    button.dataset.shown = String(shown);
    var next = Math.min(left, HISTORY_PAGE);
    button.textContent = "Show " + next + " earlier question" + (next === 1 ? "" : "s") +
      (left > next ? " (" + left + " in all)" : "");
  }
  function openConversation(id) {
    request("GET", "/api/v1/conversations/" + id + "?limit=" + HISTORY_PAGE).then(function (result) {
      var data = result.data;
      state.conversationId = data.id;
      drawQuietly(function () {
        $("thread").innerHTML = "";
        drawTurns(data.turns);
      });
      var count = data.turns.length;
      var total = result.total === null ? count : result.total;
      offerEarlier(count, total);
      $("thread-status").textContent = "Opened the conversation: " +
        (total > count ? "the newest " + count + " of " + total + " questions." :
          count + (count === 1 ? " question." : " questions."));
      loadConversations();
    }).catch(function (error) { showError(error.message); });
  }
  $("earlier-turns").addEventListener("click", function () {
    var button = this, id = state.conversationId, shown = parseInt(button.dataset.shown || "0", 10);
    if (!id) { return; }
    button.disabled = true;
    request("GET", "/api/v1/conversations/" + id + "?limit=" + HISTORY_PAGE + "&offset=" + shown)
      .then(function (result) {
        if (state.conversationId !== id) { return; }  // another conversation was opened meanwhile
        var thread = $("thread");
        var later = Array.prototype.slice.call(thread.children);
        var first = later[0] || null;
        drawQuietly(function () {
          thread.innerHTML = "";
          drawTurns(result.data.turns);
          later.forEach(function (node) { thread.appendChild(node); });
        });
        var added = result.data.turns.length;
        offerEarlier(shown + added, result.total);
        $("thread-status").textContent = "Showing " + added + " earlier question" + (added === 1 ? "." : "s.");
        // the reader stays where they were: at the turn that was first before these were drawn above it
        if (first) { first.scrollIntoView(); }
        if (button.hidden) { $("question").focus(); } else { button.focus(); }
      })
      .catch(function (error) { showError(error.message); })
      .then(function () { button.disabled = false; });
  });

  function newConversation() {
    state.conversationId = null;
    $("thread").innerHTML = "";
    offerEarlier(0, null);
    $("thread-status").textContent = "New conversation.";
    question.focus();
  }
  $("new-conversation").addEventListener("click", function () { newConversation(); loadConversations(); });

  /* ---- upload ---------------------------------------------------------------------------------------------- */
  $("upload-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var file = $("upload-file").files[0];
    if (!file) { $("upload-status").textContent = "Choose a file first."; return; }
    var form = new FormData();
    form.append("file", file);
    $("upload-status").textContent = "Uploading and indexing " + file.name + "…";
    $("upload-submit").disabled = true;
    api("POST", "/api/v1/documents/upload", form, true).then(function (doc) {
      showUpload(doc, file.name, performance.now());
    }).catch(function (error) {
      $("upload-status").textContent = error.message;
      $("upload-submit").disabled = false;
    });
  });

  // the worker indexes an upload in the background: say so, and say when it is ready
  function showUpload(doc, fileName, started) {
    var name = doc.title || fileName;
    if (doc.status === "indexed") {
      // "expires 2026-12-08 01:52 (Europe/Berlin)": the moment names its zone in brackets of its own
      $("upload-status").textContent = name + " is ready: " + doc.chunk_count +
        (doc.chunk_count === 1 ? " passage" : " passages") + ", private to you, expires " +
        fmtMoment(doc.expires_at) + ". Ask about it.";
      $("upload-submit").disabled = false;
      return;
    }
    if (doc.status === "failed") {
      $("upload-status").textContent = name + " could not be read" + (doc.error ? ": " + doc.error : ".");
      $("upload-submit").disabled = false;
      return;
    }
    if (performance.now() - started > 300000) {
      $("upload-status").textContent = name + " is still being indexed; it will be searchable once it is done.";
      $("upload-submit").disabled = false;
      return;
    }
    $("upload-status").textContent = "Indexing " + name + "…";
    setTimeout(function () {
      api("GET", "/api/v1/documents/" + doc.id).then(function (latest) { showUpload(latest, fileName, started); })
        .catch(function (error) { $("upload-status").textContent = error.message; $("upload-submit").disabled = false; });
    }, 1500);
  }

  draftRestore();
  updateCounter();
  loadConversations();
})();
