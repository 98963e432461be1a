#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# proftool report --format svg/html: self-contained interactive flame graphs, checked as XML
# and in the real consumer, a browser (headless Chromium driven by playwright-core).

load helpers

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	"$PROFTOOL" record -q -o split.data -- "$WORKLOADS/split" 0.5
	"$PROFTOOL" record -q -o cxx.data -- "$WORKLOADS/cxx" 0.3
	"$PROFTOOL" report --format folded split.data >split.folded
	"$PROFTOOL" report --format svg split.data >split.svg
	"$PROFTOOL" report --format html split.data >split.html
}

setup() {
	cd "$BATS_FILE_TMPDIR" || return 1
}

# Prints each frame of the flame graph FILE (svg, or html with the svg inline) as
# "name<TAB>x<TAB>width<TAB>fill<TAB>tooltip" (tooltip lines joined by '|'), in document order.
# The svg is parsed as XML, so this fails on anything an XML parser rejects.
frames() {
	PYTHONIOENCODING=utf-8 python3 - "$1" <<'EOF'
import sys, xml.dom.minidom
from html.parser import HTMLParser

def show(frames):
    for tip, x, w, fill in frames:
        print("\t".join([tip.split("\n")[0], x, w, fill, "|".join(tip.split("\n"))]))

path = sys.argv[1]
if path.endswith(".svg"):
    out = []
    for g in xml.dom.minidom.parse(path).getElementsByTagName("g"):
        if g.getAttribute("class") != "f":
            continue
        title = g.getElementsByTagName("title")[0]
        rect = g.getElementsByTagName("rect")[0]
        tip = "".join(n.data for n in title.childNodes)
        out.append((tip, rect.getAttribute("x"), rect.getAttribute("width"), rect.getAttribute("fill")))
    show(out)
else:
    class Page(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.out, self.tip, self.in_title, self.in_frame = [], None, False, False
        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "g" and a.get("class") == "f":
                self.in_frame, self.tip = True, ""
            elif tag == "title" and self.in_frame:
                self.in_title = True
            elif tag == "rect" and self.in_frame:
                self.out.append((self.tip, a["x"], a["width"], a["fill"]))
                self.in_frame = False
        def handle_startendtag(self, tag, attrs):
            self.handle_starttag(tag, attrs)
        def handle_endtag(self, tag):
            if tag == "title":
                self.in_title = False
        def handle_data(self, data):
            if self.in_title:
                self.tip += data
    p = Page()
    p.feed(open(path, encoding="utf-8").read())
    show(p.out)
EOF
}

# The summed width of the frames called NAME in a frames() listing on stdin.
width_of() {
	awk -F'\t' -v n="$1" '$1 == n { w += $3 } END { printf "%.2f\n", w }'
}

# How many frames the graph of the folded stacks on stdin draws: "all" and every
# distinct path from the root with at least 0.1 % of the samples.
expected_frames() {
	awk '{ n = $NF; total += n; sub(/ [0-9]+$/, ""); k = split($0, fr, ";"); p = ""
		for (i = 1; i <= k; i++) { p = p ";" fr[i]; c[p] += n } }
	END { for (p in c) if (c[p] * 1000 >= total) d++; print d + 1 }'
}

# Writes a profile (plain JSON, which report reads) with the stacks of folded lines on stdin.
folded_to_profile() {
	python3 -c '
import json, sys
names, funcs, nodes, parent, loc, samples = [], {}, {}, [], [], []
for line in sys.stdin.read().split("\n"):
    if not line:
        continue
    stack, n = line.rsplit(" ", 1)
    cur = -1
    for f in stack.split(";"):
        i = funcs.setdefault(f, len(names))
        if i == len(names):
            names.append(f)
        s = nodes.setdefault((cur, i), len(parent))
        if s == len(parent):
            parent.append(cur)
            loc.append(i)
        cur = s
    samples += [cur] * int(n)
nf, ns = len(names), len(samples)
print(json.dumps({"format": "proftool-profile", "version": 1,
    "meta": {"command": "synthetic", "event": "cpu-clock", "callgraph": "fp", "mode": "cpu",
             "backend": "perf", "freq": 1000, "period_ns": 1000000, "start_real_ns": 0,
             "duration_ns": ns * 1000000, "lost": 0, "cpu_time_ns": 0, "exit_status": 0},
    "functions": {"name": names, "module": ["synthetic"] * nf, "file": [None] * nf, "line": [0] * nf},
    "locations": {"function": list(range(nf)), "line": [0] * nf},
    "stacks": {"parent": parent, "location": loc},
    "processes": [{"pid": 1, "ppid": 0, "comm": "synthetic", "cmdline": None}],
    "threads": [{"tid": 1, "process": 0, "comm": "synthetic"}],
    "samples": {"time_us_delta": [1000] * ns, "thread": [0] * ns, "stack": samples}}))
'
}

# "samples self" of the heaviest path from the root to NAME in the folded stacks on stdin:
# what the widest frame called NAME stands for (a stray stack can put NAME on another path).
heaviest_path() {
	awk -v f="$1" '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, fr, ";"); p = ""
		for (i = 1; i <= k; i++) { p = p ";" fr[i]; if (fr[i] == f) break }
		if (i > k) next
		c[p] += n; if (i == k) s[p] += n }
	END { for (p in c) if (c[p] > best) { best = c[p]; self = s[p] + 0 }; print best + 0, self + 0 }'
}

# The tooltip of the widest frame called NAME in a frames() listing on stdin.
widest_tip() {
	awk -F'\t' -v n="$1" '$1 == n && $3 + 0 > w { w = $3 + 0; tip = $5 } END { print tip }'
}

# The value of KEY in flame_check.js output on stdin.
val() {
	sed -n "s/^$1=//p"
}

# Judges flame_check.js's report OUT on the split workload's graph, and its screenshot PNG.
check_browser_result() {
	local out=$1 png=$2 all leaf main total

	[ "$(val errors <"$out")" = none ]
	[ "$(val requests <"$out")" = none ]
	# a real picture: a PNG of some size, many colours, a good part of it covered by frames
	[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ]
	at_least "$(stat -c %s "$png")" 5000
	at_least "$(val png_colours <"$out")" 16
	at_least "$(val png_vivid <"$out")" 0.03
	[ "$(val frames <"$out")" -eq "$(expected_frames <split.folded)" ]
	for name in leaf_a leaf_b main; do
		[ "$(val "label.$name" <"$out")" = "$name" ]
		at_least "$(val "label_width.$name" <"$out")" 10
		[[ "$(val "rendered.$name" <"$out")" =~ ^[1-9][0-9.]*x1[0-9.]*$ ]]
	done
	all=$(val width.all <"$out")
	near "$(awk -v w="$(val width.leaf_a <"$out")" -v a="$all" 'BEGIN { print 100 * w / a }')" \
		"$(cum_share leaf_a <split.folded)" 1
	# hovering leaf_a: its name and share in the details line
	total=$(awk '{ s += $NF } END { print s }' <split.folded)
	leaf=$(heaviest_path leaf_a <split.folded | cut -d' ' -f1)
	main=$(heaviest_path main <split.folded | cut -d' ' -f1)
	[[ "$(val details <"$out")" == "leaf_a  |  $leaf samples, $(awk -v n="$leaf" -v t="$total" 'BEGIN { printf "%.2f", 100 * n / t }')% of all  |  "* ]]
	# clicking leaf_a: it fills the width, main (an ancestor) stays, leaf_b goes
	near "$(val zoom_leaf.leaf_a <"$out")" "$all" 1
	near "$(val zoom_leaf.main <"$out")" "$all" 1
	near "$(val zoom_leaf.leaf_b <"$out")" 0 0
	[ "$(val reset_visible <"$out")" = true ]
	near "$(val reset.leaf_a <"$out")" "$(val width.leaf_a <"$out")" 0.5
	# clicking main: main fills the width, leaf_a takes its share of main (a stray leaf_a
	# elsewhere is hidden)
	near "$(val zoom_parent.main <"$out")" "$all" 1
	near "$(awk -v w="$(val zoom_parent.leaf_a <"$out")" -v a="$all" 'BEGIN { print 100 * w / a }')" \
		"$(awk -v l="$leaf" -v m="$main" 'BEGIN { print 100 * l / m }')" 1
	# searching "leaf_": the three leaves highlighted, and the share of samples under them
	[ "$(val highlighted <"$out")" = leaf_a,leaf_b,leaf_c ]
	[ "$(val highlight_fill <"$out")" = "rgb(230, 0, 230)" ]
	near "$(val matched <"$out" | sed 's/^Matched: \([0-9.]*\)%$/\1/')" \
		"$(cum_share leaf_a <split.folded | awk -v b="$(cum_share leaf_b <split.folded)" \
			-v c="$(cum_share leaf_c <split.folded)" '{ print $1 + b + c }')" 0.5
}

@test "svg: valid XML, one element per drawn frame, widths proportional to samples" {
	frames split.svg >f
	[ "$(wc -l <f)" -eq "$(expected_frames <split.folded)" ]
	for name in all main leaf_a leaf_b leaf_c; do
		grep -q "^$name"$'\t' f || { echo "no frame $name"; false; }
	done
	[ "$(grep -c $'^all\t' f)" -eq 1 ]
	all=$(width_of all <f)
	near "$all" 1180 0.01
	for name in main leaf_a leaf_b leaf_c; do
		near "$(awk -v w="$(width_of "$name" <f)" -v a="$all" 'BEGIN { printf "%.2f", 100 * w / a }')" \
			"$(cum_share "$name" <split.folded)" 1
	done
	# the leaves sit side by side in name order, left to right, inside main
	awk -F'\t' '$1 ~ /^leaf_/ { print $2 }' f | sort -c -n
	# same profile, same bytes
	"$PROFTOOL" report --format svg split.data | cmp - split.svg
}

@test "svg: tooltips give the samples, share and seconds of each frame" {
	frames split.svg >f
	period=$(zcat split.data | python3 -c 'import json, sys; print(json.load(sys.stdin)["meta"]["period_ns"])')
	total=$(awk '{ s += $NF } END { print s }' <split.folded)
	# main's self count depends on where the samples fell: 1 is "1 sample"
	for name in leaf_a main; do
		read -r n self < <(heaviest_path "$name" <split.folded)
		tip=$(widest_tip "$name" <f)
		want=$(awk -v f="$name" -v n="$n" -v s="$self" -v t="$total" -v p="$period" 'BEGIN {
			printf "%s|%d sample%s, %.2f%% of all|total %.3f s, self %.3f s (%d sample%s)",
				f, n, n == 1 ? "" : "s", 100 * n / t, n * p / 1e9, s * p / 1e9, s,
				s == 1 ? "" : "s" }')
		[ "$tip" = "$want" ]
	done
}

@test "html: a complete page holding the same frames" {
	run --separate-stderr "$PROFTOOL" report --format html split.data
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[[ "${lines[0]}" == "<!DOCTYPE html>" ]]
	[[ "${lines[-1]}" == "</html>" ]]
	for tag in '<html lang="en">' '<head>' '<meta charset="utf-8">' '<title>Flame graph</title>' \
		'<body>' '</body>' '<svg ' '<script>'; do
		[[ "$output" == *"$tag"* ]] || { echo "missing $tag"; false; }
	done
	frames split.html >h
	frames split.svg >s
	cmp h s
}

@test "svg and html are self-contained: no references outside the file" {
	for f in split.svg split.html; do
		# XML namespace names are identifiers, not fetched
		grep -o 'https\?://[^"'"'"' <>)]*' "$f" | grep -v '^http://www.w3.org/2000/svg$' >refs || true
		[ ! -s refs ] || { echo "$f refers to: $(cat refs)"; false; }
		! grep -Eq '<(link|img|iframe|object|embed)[ >]|<script[^>]*src=|(xlink:)?href=|@import|url\(' "$f" || false
	done
	"$PROFTOOL" report --format svg -o out.svg split.data
	cmp out.svg split.svg
}

@test "chromium: the svg renders, and hovering, zooming and searching work" {
	need_browser
	png=$BATS_TEST_TMPDIR/flame-svg.png
	"$NODE" "$BATS_TEST_DIRNAME/tools/flame_check.js" split.svg "$png" leaf_a main leaf_b leaf_ >out
	cat out
	check_browser_result out "$png"
	[ "$(val search_ui <out)" = prompt ]
}

@test "chromium: the html page renders, and hovering, zooming and searching work" {
	need_browser
	png=$BATS_TEST_TMPDIR/flame-html.png
	"$NODE" "$BATS_TEST_DIRNAME/tools/flame_check.js" split.html "$png" leaf_a main leaf_b leaf_ >out
	cat out
	check_browser_result out "$png"
	[ "$(val search_ui <out)" = field ]
}

@test "escaping: C++ templates and hostile names stay names, in valid XML and HTML" {
	# the C++ workload: a demangled template, model::Layer<unsigned long>::forward(...)
	"$PROFTOOL" report --format svg cxx.data >cxx.svg
	frames cxx.svg >f
	grep -q $'^model::Layer<unsigned long>::forward(unsigned long, unsigned long) const' f
	! grep -q '<unsigned long>' cxx.svg || false
	# hand-made names: markup, quotes, CDATA and script ends, a tab, a control byte, non-ASCII
	{
		printf 'main;a<b>&"c'"'"'d 40\n'
		printf 'main;]]></script><script>alert(1)</script><!-- 30\n'
		printf 'main;tab\there\001ctl 20\n'
		printf 'main;\303\274n\304\261c\303\266de \342\234\223 \360\235\204\236 10\n'
	} | folded_to_profile >hostile.json
	"$PROFTOOL" report --format svg hostile.json >hostile.svg
	"$PROFTOOL" report --format html hostile.json >hostile.html
	for f in hostile.svg hostile.html; do
		frames "$f" | cut -f1 | LC_ALL=C sort >names
		# the tab became a space, the control byte U+FFFD
		printf '%s\n' all main 'a<b>&"c'"'"'d' ']]></script><script>alert(1)</script><!--' \
			$'tab here\357\277\275ctl' $'\303\274n\304\261c\303\266de \342\234\223 \360\235\204\236' |
			LC_ALL=C sort >want
		diff want names
	done
	# the page's only script is its own
	[ "$(grep -c '<script' hostile.html)" -eq 1 ]
	[ "$(grep -c '<script' hostile.svg)" -eq 1 ]
}

@test "a wide profile (10^5 distinct stacks) and a 2000-frame recursion stay quick and small" {
	# main;gI;hJ;kN for 10^5 leaves (each under 0.1 %, left out of the drawing), then
	# 2000 frames of dive with bottom on top (a tenth of the samples, drawn whole)
	awk 'BEGIN {
		for (i = 0; i < 100000; i++) printf "main;g%d;h%d;k%d 1\n", i % 100, int(i / 100) % 100, i
		s = "main"; for (d = 0; d < 2000; d++) s = s ";dive"; print s ";bottom 10000"
	}' | folded_to_profile >big.json
	run --separate-stderr timeout 60 "$PROFTOOL" report --format svg -o big.svg big.json
	[ "$status" -eq 0 ]
	run --separate-stderr timeout 60 "$PROFTOOL" report --format html -o big.html big.json
	[ "$status" -eq 0 ]
	frames big.svg >f
	# all, main, g0..g99 (1000 samples each), 2000 dive frames and bottom
	[ "$(wc -l <f)" -eq 2103 ]
	[ "$(grep -c $'^dive\t' f)" -eq 2000 ]
	[ "$(grep -c $'^k' f)" -eq 0 ]
	[ "$(awk -F'\t' '$1 == "all" { print $5 }' f)" = "all|110000 samples, 100.00% of all|total 110.000 s, self 0.000 s (0 samples)" ]
	at_least 2000000 "$(stat -c %s big.svg)"
	at_least 2000000 "$(stat -c %s big.html)"
}

@test "diff: frames coloured by the change of their share, red grew, blue shrank" {
	printf 'main;grow 20\nmain;shrink 60\nmain;same 20\n' | folded_to_profile >base.json
	printf 'main;grow 60\nmain;shrink 20\nmain;same 20\n' | folded_to_profile >new.json
	for fmt in svg html; do
		run --separate-stderr "$PROFTOOL" diff --format "$fmt" -o "diff.$fmt" base.json new.json
		[ "$status" -eq 0 ]
		frames "diff.$fmt" >f
		[ "$(awk -F'\t' '$1 == "grow" { print $4 }' f)" = "rgb(255,85,85)" ]
		[ "$(awk -F'\t' '$1 == "shrink" { print $4 }' f)" = "rgb(85,85,255)" ]
		[ "$(awk -F'\t' '$1 == "same" { print $4 }' f)" = "rgb(255,255,255)" ]
		[ "$(awk -F'\t' '$1 == "main" { print $4 }' f)" = "rgb(255,255,255)" ]
		[[ "$(awk -F'\t' '$1 == "grow" { print $5 }' f)" == "grow|60 samples, 60.00% of all|base: 20 samples, 20.00%; change +40.00 points|"* ]]
		# widths are the new profile's
		near "$(width_of grow <f)" "$(awk 'BEGIN { print 0.6 * 1180 }')" 0.01
	done
}
