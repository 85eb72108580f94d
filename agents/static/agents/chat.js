/* Athena chat page: plain JavaScript over the REST API (session cookie + CSRF token). */
(function () {
  "use strict";

  var app = document.getElementById("chat-app");
  if (!app) { return; }
  var maxChars = parseInt(app.getAttribute("data-max-chars"), 10) || 1000;
  var state = { conversationId: null, busy: false };

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
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
    var options = { method: method, credentials: "same-origin", headers: { "X-CSRFToken": csrfToken() } };
    if (body !== undefined) {
      if (isForm) { options.body = body; }
      else { options.body = JSON.stringify(body); options.headers["Content-Type"] = "application/json"; }
    }
    return fetch(url, options).then(function (response) {
      if (response.status === 204) { return null; }
      return response.json().catch(function () { return {}; }).then(function (data) {
        if (!response.ok) {
          var message = (data && data.error && data.error.message) || ("request failed (" + response.status + ")");
          var error = new Error(message);
          error.status = response.status;
          throw error;
        }
        return data;
      });
    });
  }
  function fmtDate(value) {
    if (!value) { return "unknown"; }
    var date = new Date(value);
    return isNaN(date.getTime()) ? String(value) : date.toISOString().slice(0, 10);
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
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { $("ask-form").requestSubmit(); }
  });

  var progressTimer = null;
  function setBusy(busy) {
    state.busy = busy;
    $("ask-submit").disabled = busy;
    $("progress").hidden = !busy;
    if (progressTimer) { clearInterval(progressTimer); progressTimer = null; }
    if (busy) {
      var started = Date.now();
      var steps = ["Checking the question…", "Searching the documents…", "Weighing the evidence…",
                   "Composing a cited answer…"];
      $("progress-text").textContent = steps[0];
      progressTimer = setInterval(function () {
        var seconds = (Date.now() - started) / 1000;
        var step = steps[Math.min(steps.length - 1, Math.floor(seconds / 1.5))];
        $("progress-text").textContent = step + " " + seconds.toFixed(0) + " s";
      }, 500);
    }
  }

  $("ask-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var text = question.value.trim();
    if (!text || state.busy) { return; }
    if (text.length > maxChars) { showError("Questions are limited to " + maxChars + " characters."); return; }
    showError("");
    setBusy(true);
    var body = { question: text };
    if (state.conversationId) { body.conversation_id = state.conversationId; }
    api("POST", "/api/v1/ask", body).then(function (data) {
      state.conversationId = data.conversation_id || state.conversationId;
      renderTurn(text, data, data.answer_id, null);
      question.value = "";
      updateCounter();
      loadConversations();
    }).catch(function (error) { showError(error.message); }).then(function () { setBusy(false); });
  });

  function showError(message) {
    $("ask-error").textContent = message;
    $("ask-error").hidden = !message;
  }

  /* ---- rendering an answer ------------------------------------------------------------------------------ */
  function answerWithLinks(text, citations, turn) {
    var container = el("div", { className: "answer-text" });
    var byRef = {};
    (citations || []).forEach(function (c) { byRef[String(c.ref)] = c; });
    var pattern = /\[(\d+)\]/g;
    var last = 0;
    var match;
    while ((match = pattern.exec(text)) !== null) {
      container.appendChild(document.createTextNode(text.slice(last, match.index)));
      var citation = byRef[match[1]];
      if (citation) {
        var link = el("a", { href: "#", className: "cite", "data-ref": match[1], text: "[" + match[1] + "]",
                             title: citation.title + (citation.section ? " — " + citation.section : "") });
        link.addEventListener("click", (function (c) {
          return function (e) { e.preventDefault(); openCitation(c, turn); };
        })(citation));
        container.appendChild(link);
      } else {
        container.appendChild(document.createTextNode(match[0]));
      }
      last = pattern.lastIndex;
    }
    container.appendChild(document.createTextNode(text.slice(last)));
    return container;
  }

  function renderTurn(askedText, data, answerId, vote) {
    var welcome = $("welcome");
    if (welcome) { welcome.remove(); }
    var turn = el("article", { className: "turn" + (data.abstained ? " abstained" : ""), "data-answer-id": answerId || "" });
    turn.appendChild(el("div", { className: "question-bubble", text: askedText }));
    var answerBox = el("div", { className: "answer" });
    answerBox.appendChild(answerWithLinks(data.answer || "", data.citations, turn));
    if (data.abstained) {
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
      var sources = el("ol", { className: "citations" });
      data.citations.forEach(function (c) {
        var link = el("a", { href: "#", className: "cite-title", text: c.title || c.document });
        link.addEventListener("click", function (e) { e.preventDefault(); openCitation(c, turn); });
        sources.appendChild(el("li", { value: String(c.ref) }, [link, el("span", { className: "small muted",
          text: " · " + (c.section || "—") + " · updated " + fmtDate(c.updated_at) + " · " + (c.access_tier || "") })]));
      });
      answerBox.appendChild(sources);
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
    turn.appendChild(answerBox);
    $("thread").appendChild(turn);
    turn.scrollIntoView({ block: "end" });
    renderEvidence(data);
    renderTrace(data);
  }

  function feedbackBox(answerId, vote) {
    var box = el("div", { className: "feedback" });
    var up = el("button", { type: "button", className: "vote up" + (vote === 1 ? " chosen" : ""), title: "Helpful", text: "▲ helpful" });
    var down = el("button", { type: "button", className: "vote down" + (vote === -1 ? " chosen" : ""), title: "Not helpful", text: "▼ not helpful" });
    var comment = el("input", { type: "text", className: "feedback-comment", maxlength: "2000",
                                placeholder: "Optional comment (what was wrong or missing?)" });
    var status = el("span", { className: "small muted feedback-status", role: "status" });
    function send(choice) {
      api("POST", "/api/v1/answers/" + answerId + "/feedback", { vote: choice, comment: comment.value })
        .then(function (data) {
          up.classList.toggle("chosen", choice === "up");
          down.classList.toggle("chosen", choice === "down");
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
      tab.classList.toggle("active", tab.getAttribute("data-tab") === name);
    });
    ["passage", "evidence", "trace"].forEach(function (n) { $("panel-" + n).hidden = n !== name; });
  }
  Array.prototype.forEach.call(document.querySelectorAll(".tab"), function (tab) {
    tab.addEventListener("click", function () { selectTab(tab.getAttribute("data-tab")); });
  });

  function highlighted(text, quote) {
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
    if (index < 0) {
      box.appendChild(document.createTextNode(text));
      if (quote) { box.appendChild(el("p", {}, [el("strong", { text: "Quoted: " }), el("mark", { text: quote })])); }
      return box;
    }
    box.appendChild(document.createTextNode(text.slice(0, index)));
    box.appendChild(el("mark", { className: "quote", text: text.slice(index, index + length) }));
    box.appendChild(document.createTextNode(text.slice(index + length)));
    return box;
  }

  function openCitation(citation, turn) {
    selectTab("passage");
    var panel = $("panel-passage");
    panel.innerHTML = "";
    panel.appendChild(el("p", { className: "muted", text: "Loading passage…" }));
    api("GET", "/api/v1/passages/" + citation.chunk_id).then(function (data) {
      panel.innerHTML = "";
      var doc = data.document;
      panel.appendChild(el("h3", { className: "passage-title", text: "[" + citation.ref + "] " + doc.title }));
      var dl = el("dl", { className: "doc-meta" });
      [["Document", doc.source], ["Section", data.section || "—"], ["Page", data.page || "—"],
       ["Last updated", fmtDate(doc.updated_at)], ["Access tier", doc.access_tier], ["Type", doc.doc_type],
       ["Version", doc.version]].forEach(function (row) {
        dl.appendChild(el("dt", { text: row[0] })); dl.appendChild(el("dd", { text: String(row[1]) }));
      });
      if (doc.superseded) { dl.appendChild(el("dd", { className: "warn", text: "This document has been superseded." })); }
      panel.appendChild(dl);
      panel.appendChild(highlighted(data.text, citation.quote));
      if (doc.sections && doc.sections.length) {
        var sections = el("details", {}, [el("summary", { text: "Sections of this document (" + doc.sections.length + ")" })]);
        var list = el("ul", { className: "small" });
        doc.sections.forEach(function (s) { list.appendChild(el("li", { text: s })); });
        sections.appendChild(list);
        panel.appendChild(sections);
      }
    }).catch(function (error) {
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
  function loadConversations() {
    api("GET", "/api/v1/conversations").then(function (items) {
      var list = $("conversation-list");
      list.innerHTML = "";
      if (!items.length) { list.appendChild(el("li", { className: "muted", text: "No conversations yet." })); }
      items.forEach(function (c) {
        var open = el("a", { href: "#", className: "conversation-link" + (c.id === state.conversationId ? " current" : ""),
                             text: c.title || "(untitled)", title: fmtDate(c.updated_at) + " · " + c.turns + " question(s)" });
        open.addEventListener("click", function (e) { e.preventDefault(); openConversation(c.id); });
        var remove = el("button", { type: "button", className: "link delete", title: "Delete conversation", text: "×" });
        remove.addEventListener("click", function () {
          if (!window.confirm("Delete this conversation?")) { return; }
          api("DELETE", "/api/v1/conversations/" + c.id).then(function () {
            if (state.conversationId === c.id) { newConversation(); }
            loadConversations();
          });
        });
        list.appendChild(el("li", {}, [open, remove]));
      });
    }).catch(function () { /* the list is a convenience; asking still works */ });
  }

  function openConversation(id) {
    api("GET", "/api/v1/conversations/" + id).then(function (data) {
      state.conversationId = data.id;
      $("thread").innerHTML = "";
      data.turns.forEach(function (turn) { renderTurn(turn.question, turn.response || {}, turn.answer_id, turn.vote); });
      loadConversations();
    }).catch(function (error) { showError(error.message); });
  }

  function newConversation() {
    state.conversationId = null;
    $("thread").innerHTML = "";
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
    api("POST", "/api/v1/documents/upload", form, true).then(function (doc) {
      var name = doc.title || doc.source;
      $("upload-status").textContent = doc.status === "indexed"
        ? name + " is ready (" + doc.chunk_count + " passages, private to you, expires " + fmtDate(doc.expires_at) +
          "). Ask about it above."
        : name + " is being indexed; ask about it in a minute.";
    }).catch(function (error) { $("upload-status").textContent = error.message; });
  });

  updateCounter();
  loadConversations();
})();
