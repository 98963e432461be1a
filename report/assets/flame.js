(function () {
"use strict";
var svg = document.getElementById("fg");
var pad = +svg.getAttribute("data-pad"), plot = +svg.getAttribute("data-plot");
var cw = +svg.getAttribute("data-cw");
var details = document.getElementById("fg-details");
var matched = document.getElementById("fg-matched");
var reset = document.getElementById("fg-reset");
var search = document.getElementById("fg-search");
var field = search.tagName.toLowerCase() === "input";
var frames = [], term = "", zoomed = null;
var gs = svg.querySelectorAll("g.f");
for (var i = 0; i < gs.length; i++) {
	var g = gs[i], tip = g.querySelector("title").textContent;
	var rect = g.querySelector("rect");
	frames.push({ g: g, rect: rect, text: g.querySelector("text"),
		x: +g.getAttribute("data-x"), n: +g.getAttribute("data-n"),
		y: +rect.getAttribute("y"), name: tip.split("\n")[0], tip: tip });
	g.fgIndex = i;
}
var total = frames.length ? frames[0].n : 0;

/* the label that fits W px, cut with ".." as the writer does */
function fit(name, w) {
	var max = Math.floor((w - 6) / cw), chars = Array.from(name);
	if (chars.length <= max) return name;
	return max < 3 ? "" : chars.slice(0, max - 2).join("") + "..";
}
function place(f, x, w) {
	f.rect.setAttribute("x", x.toFixed(2));
	f.rect.setAttribute("width", w.toFixed(2));
	f.text.setAttribute("x", (x + 3).toFixed(2));
	f.text.textContent = fit(f.name, w);
}
/* Z fills the width, its ancestors stay (faded), everything else hides; null resets */
function zoom(z) {
	if (z === frames[0] || !total) z = null;
	var x0 = z ? z.x : 0, n0 = z ? z.n : total, y0 = z ? z.y : Infinity;
	zoomed = z;
	frames.forEach(function (f) {
		var inside = f.y <= y0 && f.x >= x0 && f.x + f.n <= x0 + n0;
		var above = !inside && f.y > y0 && f.x <= x0 && f.x + f.n >= x0 + n0;
		f.g.classList.toggle("h", !inside && !above);
		f.g.classList.toggle("a", above);
		if (inside) place(f, pad + (f.x - x0) * plot / n0, f.n * plot / n0);
		else if (above) place(f, pad, plot);
	});
	reset.classList.toggle("off", !z);
}
/* highlights the frames whose name matches T (a regular expression, or else plain text) */
function find(t) {
	var re = null, hits = [], sum = 0, end = -1;
	term = t || "";
	if (term) {
		try { re = new RegExp(term); }
		catch (e) { re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")); }
	}
	frames.forEach(function (f) {
		var hit = !!re && re.test(f.name);
		f.g.classList.toggle("m", hit);
		if (hit) hits.push(f);
	});
	/* frames nest or are apart: count each sample once, under its outermost match */
	hits.sort(function (a, b) { return a.x - b.x || b.n - a.n; });
	hits.forEach(function (f) {
		if (f.x + f.n > end) {
			sum += f.x + f.n - Math.max(f.x, end);
			end = f.x + f.n;
		}
	});
	matched.textContent = re ? "Matched: " + (total ? 100 * sum / total : 0).toFixed(2) + "%" : "";
}
function ask() {
	if (field) { search.focus(); search.select(); return; }
	var t = prompt("Search frames (regular expression, empty to clear):", term);
	if (t !== null) find(t);
}
function frameOf(e) {
	var g = e.target.closest ? e.target.closest("g.f") : null;
	return g ? frames[g.fgIndex] : null;
}
svg.addEventListener("mouseover", function (e) {
	var f = frameOf(e);
	details.textContent = f ? f.tip.split("\n").join("  |  ") : "";
});
svg.addEventListener("mouseleave", function () { details.textContent = ""; });
svg.addEventListener("click", function (e) {
	var f = frameOf(e);
	if (f) zoom(f);
});
reset.addEventListener("click", function () { zoom(null); });
if (field) search.addEventListener("input", function () { find(search.value); });
else search.addEventListener("click", ask);
document.addEventListener("keydown", function (e) {
	if ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F")) {
		e.preventDefault();
		ask();
	} else if (e.key === "Escape") {
		if (field) search.value = "";
		if (term) find(""); else zoom(null);
	}
});
/* the page's header stays in view: start at the bottom, where the root and the widest frames are */
if (field) window.scrollTo(0, document.documentElement.scrollHeight);
})();
