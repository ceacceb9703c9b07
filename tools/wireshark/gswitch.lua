-- gswitch.lua: Wireshark dissector for the frames of gswitch
-- (docs/wire-formats.md): the GC envelope over EtherType 0x88B6 and over
-- UDP (SFC Back-to-Sender on port 19020; ExpressPass credits, requests and
-- stops on the flows' own ports, found by a heuristic on UDP payloads that
-- start "GC" version 1), BFC PAUSE/RESUME/BITMAP, the BFC upstream-queue
-- tag (TPID 0x88B5), SFC BTS with the quoted headers, and the gsperf
-- header (heuristic on UDP payloads that start "GS" version 1).
--
-- Install: copy this file into Wireshark's personal plugins folder
-- (Linux: ~/.local/lib/wireshark/plugins/; Help > About Wireshark > Folders
-- shows it), or load it for one run:
--     wireshark -X lua_script:tools/wireshark/gswitch.lua file.pcapng
--     tshark -X lua_script:tools/wireshark/gswitch.lua -r file.pcapng -V
-- Heuristics run after port-based dissectors unless UDP is told to try
-- them first; for credits of flows on well-known ports, set
-- Preferences > Protocols > UDP > Try heuristic sub-dissectors first
-- (tshark: -o udp.try_heuristic_first:TRUE).
--
-- Display filter fields all start with "gswitch." (gswitch.gc.type,
-- gswitch.bfc.queue, gswitch.bts.quote.src, gswitch.xp.credit_seq,
-- gswitch.tag.upstream_queue, gswitch.gsperf.flow_id, ...); docs/operations.md
-- lists them. tools/wireshark/dissector_test.go checks every field against
-- frames built by package wire and emitted by the switch.

local gc_types = {
    [1] = "BFC_PAUSE", [2] = "BFC_RESUME", [3] = "BFC_BITMAP",
    [16] = "SFC_BTS",
    [32] = "XP_CREDIT", [33] = "XP_REQUEST", [34] = "XP_STOP",
}
-- smallest body of each type (a BITMAP needs its bitmap on top; a BTS a
-- whole IPv4 header in its quote)
local gc_min_body = { [1] = 12, [2] = 12, [3] = 12, [16] = 36, [32] = 8, [33] = 16, [34] = 8 }

local function type_range(t)
    if t >= 1 and t <= 15 then return "link-local" end
    if t >= 16 and t <= 47 then return "routed" end
    return "unassigned"
end

---------------------------------------------------------------- GC envelope
local gc = Proto("gswitch", "gswitch control message (GC)")
local f = gc.fields
f.magic   = ProtoField.string("gswitch.gc.magic", "Magic")
f.version = ProtoField.uint8("gswitch.gc.version", "Version")
f.type    = ProtoField.uint8("gswitch.gc.type", "Type", base.DEC, gc_types)
f.length  = ProtoField.uint16("gswitch.gc.length", "Body length")
f.flags   = ProtoField.uint16("gswitch.gc.flags", "Flags", base.HEX)
f.body    = ProtoField.bytes("gswitch.gc.body", "Body")
f.padding = ProtoField.bytes("gswitch.gc.padding", "Padding")

-- BFC
f.bfc_seq     = ProtoField.uint32("gswitch.bfc.seq", "Sequence")
f.bfc_switch  = ProtoField.uint16("gswitch.bfc.switch", "Sender switch")
f.bfc_port    = ProtoField.uint16("gswitch.bfc.port", "Sender port")
f.bfc_queue   = ProtoField.uint16("gswitch.bfc.queue", "Queue")
f.bfc_nqueues = ProtoField.uint16("gswitch.bfc.nqueues", "Queues in bitmap")
f.bfc_bitmap  = ProtoField.bytes("gswitch.bfc.bitmap", "Bitmap")
f.bfc_npaused = ProtoField.uint16("gswitch.bfc.paused_count", "Queues paused")
f.bfc_paused  = ProtoField.string("gswitch.bfc.paused", "Paused queues")

-- SFC BTS
f.bts_flags      = ProtoField.uint16("gswitch.bts.flags", "BTS flags", base.HEX)
f.bts_cacheable  = ProtoField.bool("gswitch.bts.flags.cacheable", "Cacheable", 16, nil, 0x0001)
f.bts_from_cache = ProtoField.bool("gswitch.bts.flags.from_cache", "From cache", 16, nil, 0x0002)
f.bts_from_est   = ProtoField.bool("gswitch.bts.flags.from_estimator", "From estimator", 16, nil, 0x0004)
f.bts_pause      = ProtoField.uint32("gswitch.bts.pause", "Pause (us)")
f.bts_switch     = ProtoField.uint16("gswitch.bts.switch", "Congested switch")
f.bts_port       = ProtoField.uint16("gswitch.bts.port", "Congested port")
f.bts_queue      = ProtoField.uint16("gswitch.bts.queue", "Congested queue")
f.bts_reserved   = ProtoField.uint16("gswitch.bts.reserved", "Reserved")
f.bts_depth      = ProtoField.uint32("gswitch.bts.depth", "Queue depth (bytes)")
f.bts_quote      = ProtoField.bytes("gswitch.bts.quote", "Quote")
f.q_version      = ProtoField.uint8("gswitch.bts.quote.version", "Quoted IP version")
f.q_ihl          = ProtoField.uint8("gswitch.bts.quote.ihl", "Quoted IP header length (words)")
f.q_tos          = ProtoField.uint8("gswitch.bts.quote.tos", "Quoted TOS", base.HEX)
f.q_total        = ProtoField.uint16("gswitch.bts.quote.total_length", "Quoted IP total length")
f.q_ttl          = ProtoField.uint8("gswitch.bts.quote.ttl", "Quoted TTL")
f.q_proto        = ProtoField.uint8("gswitch.bts.quote.proto", "Quoted protocol")
f.q_src          = ProtoField.ipv4("gswitch.bts.quote.src", "Quoted source")
f.q_dst          = ProtoField.ipv4("gswitch.bts.quote.dst", "Quoted destination")
f.q_sport        = ProtoField.uint16("gswitch.bts.quote.sport", "Quoted source port")
f.q_dport        = ProtoField.uint16("gswitch.bts.quote.dport", "Quoted destination port")
f.q_flow         = ProtoField.uint64("gswitch.bts.quote.gsperf_flow", "Quoted gsperf flow id")

-- ExpressPass
f.xp_seq  = ProtoField.uint32("gswitch.xp.credit_seq", "Credit sequence")
f.xp_sent = ProtoField.uint32("gswitch.xp.sent_time", "Sent time (us)")
f.xp_flow = ProtoField.uint64("gswitch.xp.flow_id", "Flow id")
f.xp_size = ProtoField.uint64("gswitch.xp.size", "Flow size (bytes)")

local e_bad = ProtoExpert.new("gswitch.malformed", "Malformed gswitch message", expert.group.MALFORMED, expert.severity.ERROR)
gc.experts = { e_bad }

local function dissect_bfc(t, body, tree, pinfo)
    tree:add(f.bfc_seq, body(0, 4))
    tree:add(f.bfc_switch, body(4, 2))
    tree:add(f.bfc_port, body(6, 2))
    tree:add(f.bfc_queue, body(8, 2))
    tree:add(f.bfc_nqueues, body(10, 2))
    local q, nq = body(8, 2):uint(), body(10, 2):uint()
    if t ~= 3 then
        pinfo.cols.info:append(string.format(" seq %d switch %d port %d queue %d", body(0, 4):uint(), body(4, 2):uint(), body(6, 2):uint(), q))
        if nq ~= 0 then tree:add_proto_expert_info(e_bad, "PAUSE/RESUME with nqueues != 0") end
        return
    end
    local need = math.floor((nq + 7) / 8)
    if nq == 0 or nq > 4096 or body:len() < 12 + need then
        tree:add_proto_expert_info(e_bad, "bitmap of " .. nq .. " queues does not fit")
        return
    end
    tree:add(f.bfc_bitmap, body(12, need))
    local paused = {}
    for i = 0, nq - 1 do
        local byte = body(12 + math.floor(i / 8), 1):uint()
        if bit32.band(bit32.rshift(byte, i % 8), 1) == 1 then paused[#paused + 1] = tostring(i) end
    end
    tree:add(f.bfc_npaused, body(10, 2), #paused)
    tree:add(f.bfc_paused, body(12, need), table.concat(paused, ","))
    pinfo.cols.info:append(string.format(" seq %d switch %d port %d: %d of %d queues paused", body(0, 4):uint(), body(4, 2):uint(), body(6, 2):uint(), #paused, nq))
end

local function dissect_quote(q, tree)
    if q:len() < 20 then return end
    local st = tree:add(f.bts_quote, q)
    local vi = q(0, 1):uint()
    st:add(f.q_version, q(0, 1), bit32.rshift(vi, 4))
    st:add(f.q_ihl, q(0, 1), bit32.band(vi, 15))
    st:add(f.q_tos, q(1, 1))
    st:add(f.q_total, q(2, 2))
    st:add(f.q_ttl, q(8, 1))
    st:add(f.q_proto, q(9, 1))
    st:add(f.q_src, q(12, 4))
    st:add(f.q_dst, q(16, 4))
    local ihl = bit32.band(vi, 15) * 4
    local proto = q(9, 1):uint()
    if (proto == 6 or proto == 17) and q:len() >= ihl + 4 then
        st:add(f.q_sport, q(ihl, 2))
        st:add(f.q_dport, q(ihl + 2, 2))
        -- a gsperf segment: its header's first 16 bytes follow the UDP header
        if proto == 17 and q:len() >= ihl + 8 + 16 and q(ihl + 8, 2):string() == "GS" and q(ihl + 10, 1):uint() == 1 then
            st:add(f.q_flow, q(ihl + 16, 8))
        end
    end
end

local function dissect_bts(body, flags_range, tree, pinfo)
    local ft = tree:add(f.bts_flags, flags_range)
    ft:add(f.bts_cacheable, flags_range)
    ft:add(f.bts_from_cache, flags_range)
    ft:add(f.bts_from_est, flags_range)
    tree:add(f.bts_pause, body(0, 4))
    tree:add(f.bts_switch, body(4, 2))
    tree:add(f.bts_port, body(6, 2))
    tree:add(f.bts_queue, body(8, 2))
    tree:add(f.bts_reserved, body(10, 2))
    tree:add(f.bts_depth, body(12, 4))
    dissect_quote(body(16), tree)
    pinfo.cols.info:append(string.format(" pause %dus switch %d port %d queue %d depth %d",
        body(0, 4):uint(), body(4, 2):uint(), body(6, 2):uint(), body(8, 2):uint(), body(12, 4):uint()))
end

-- dissect_gc decodes a GC message at the start of tvb and returns the bytes
-- it used (0 if tvb does not hold one).
local function dissect_gc(tvb, pinfo, tree)
    if tvb:len() < 8 or tvb(0, 2):string() ~= "GC" then return 0 end
    local t, n = tvb(3, 1):uint(), tvb(4, 2):uint()
    pinfo.cols.protocol = "gswitch"
    pinfo.cols.info = gc_types[t] or ("GC type " .. t .. " (" .. type_range(t) .. ")")
    local msgLen = math.min(8 + n, tvb:len())
    local st = tree:add(gc, tvb(0, msgLen), "gswitch " .. (gc_types[t] or ("type " .. t)))
    st:add(f.magic, tvb(0, 2))
    st:add(f.version, tvb(2, 1))
    st:add(f.type, tvb(3, 1))
    st:add(f.length, tvb(4, 2))
    st:add(f.flags, tvb(6, 2))
    if tvb(2, 1):uint() ~= 1 then
        st:add_proto_expert_info(e_bad, "unknown version " .. tvb(2, 1):uint())
        return tvb:len()
    end
    if 8 + n > tvb:len() then
        st:add_proto_expert_info(e_bad, "length " .. n .. " runs past the " .. (tvb:len() - 8) .. " bytes of body")
        return tvb:len()
    end
    local min = gc_min_body[t]
    if min == nil then
        st:add_proto_expert_info(e_bad, "unknown type " .. t)
        if n > 0 then st:add(f.body, tvb(8, n)) end
        return 8 + n
    end
    if n < min then
        st:add_proto_expert_info(e_bad, "body of " .. n .. " bytes, " .. gc_types[t] .. " needs " .. min)
        return 8 + n
    end
    local body = tvb(8, n):tvb()
    if t <= 3 then
        dissect_bfc(t, body, st, pinfo)
    elseif t == 16 then
        dissect_bts(body, tvb(6, 2), st, pinfo)
    elseif t == 32 then
        st:add(f.xp_seq, body(0, 4))
        st:add(f.xp_sent, body(4, 4))
        pinfo.cols.info:append(string.format(" seq %d sent %dus", body(0, 4):uint(), body(4, 4):uint()))
    elseif t == 33 or t == 34 then
        st:add(f.xp_flow, body(0, 8))
        if t == 33 then st:add(f.xp_size, body(8, 8)) end
        pinfo.cols.info:append(" flow " .. tostring(body(0, 8):uint64()))
    end
    return 8 + n
end

function gc.dissector(tvb, pinfo, tree)
    local used = dissect_gc(tvb, pinfo, tree)
    if used > 0 and used < tvb:len() then
        tree:add(f.padding, tvb(used))
    end
    return tvb:len()
end

local function heur_gc(tvb, pinfo, tree)
    if tvb:len() < 8 or tvb(0, 2):string() ~= "GC" or tvb(2, 1):uint() ~= 1 or gc_types[tvb(3, 1):uint()] == nil then
        return false
    end
    gc.dissector(tvb, pinfo, tree)
    return true
end

DissectorTable.get("ethertype"):add(0x88B6, gc)
DissectorTable.get("udp.port"):add(19020, gc)
gc:register_heuristic("udp", heur_gc)

------------------------------------------------------------- BFC upstream tag
local tag = Proto("gswitch_tag", "gswitch BFC upstream-queue tag")
local tf = tag.fields
tf.flags = ProtoField.uint16("gswitch.tag.flags", "Flags", base.HEX, nil, 0xF000)
tf.upq   = ProtoField.uint16("gswitch.tag.upstream_queue", "Upstream queue", base.DEC, nil, 0x0FFF)
tf.etype = ProtoField.uint16("gswitch.tag.ethertype", "Inner EtherType", base.HEX)

function tag.dissector(tvb, pinfo, tree)
    if tvb:len() < 4 then return 0 end
    local st = tree:add(tag, tvb(0, 4), "gswitch BFC tag, upstream queue " .. bit32.band(tvb(0, 2):uint(), 0x0FFF))
    st:add(tf.flags, tvb(0, 2))
    st:add(tf.upq, tvb(0, 2))
    st:add(tf.etype, tvb(2, 2))
    local inner = tvb(2, 2):uint()
    if not DissectorTable.get("ethertype"):try(inner, tvb(4):tvb(), pinfo, tree) then
        Dissector.get("data"):call(tvb(4):tvb(), pinfo, tree)
    end
    return tvb:len()
end

DissectorTable.get("ethertype"):add(0x88B5, tag)

---------------------------------------------------------------- gsperf header
local gs = Proto("gsperf", "gsperf segment header")
local gf = gs.fields
local gs_types = { [1] = "data", [2] = "ack", [3] = "probe", [4] = "probe ack" }
gf.magic    = ProtoField.string("gswitch.gsperf.magic", "Magic")
gf.version  = ProtoField.uint8("gswitch.gsperf.version", "Version")
gf.type     = ProtoField.uint8("gswitch.gsperf.type", "Type", base.DEC, gs_types)
gf.flags    = ProtoField.uint16("gswitch.gsperf.flags", "Flags", base.HEX)
gf.fin      = ProtoField.bool("gswitch.gsperf.flags.fin", "FIN", 16, nil, 0x0001)
gf.retx     = ProtoField.bool("gswitch.gsperf.flags.retx", "RETX", 16, nil, 0x0002)
gf.hdrlen   = ProtoField.uint16("gswitch.gsperf.hdrlen", "Header length")
gf.flow     = ProtoField.uint64("gswitch.gsperf.flow_id", "Flow id")
gf.offset   = ProtoField.uint64("gswitch.gsperf.offset", "Offset")
gf.acked    = ProtoField.uint64("gswitch.gsperf.acked", "Bytes received in order")
gf.size     = ProtoField.uint64("gswitch.gsperf.size", "Flow size")
gf.priority = ProtoField.uint32("gswitch.gsperf.priority", "Priority (remaining bytes)")
gf.window   = ProtoField.uint32("gswitch.gsperf.window", "Window")
gf.ts       = ProtoField.uint64("gswitch.gsperf.timestamp", "Timestamp (ns)")
gf.mech     = ProtoField.uint64("gswitch.gsperf.mech", "Mechanism field", base.HEX)
gf.mech_upq = ProtoField.uint16("gswitch.gsperf.mech.bfc_upstream_queue", "As BFC: upstream queue", base.DEC, nil, 0x0FFF)
gf.mech_seq = ProtoField.uint32("gswitch.gsperf.mech.xp_credit_seq", "As ExpressPass: credit sequence")
gf.mech_snt = ProtoField.uint32("gswitch.gsperf.mech.xp_sent_time", "As ExpressPass: sent time (us)")
gf.payload  = ProtoField.bytes("gswitch.gsperf.payload", "Payload")

function gs.dissector(tvb, pinfo, tree)
    if tvb:len() < 64 then return 0 end
    pinfo.cols.protocol = "gsperf"
    local ty = tvb(3, 1):uint()
    pinfo.cols.info = string.format("gsperf %s flow %s offset %s size %s", gs_types[ty] or ty,
        tostring(tvb(8, 8):uint64()), tostring(tvb(16, 8):uint64()), tostring(tvb(32, 8):uint64()))
    local hl = tvb(6, 2):uint()
    local st = tree:add(gs, tvb(0, math.min(math.max(hl, 64), tvb:len())))
    st:add(gf.magic, tvb(0, 2))
    st:add(gf.version, tvb(2, 1))
    st:add(gf.type, tvb(3, 1))
    local ft = st:add(gf.flags, tvb(4, 2))
    ft:add(gf.fin, tvb(4, 2))
    ft:add(gf.retx, tvb(4, 2))
    st:add(gf.hdrlen, tvb(6, 2))
    st:add(gf.flow, tvb(8, 8))
    st:add(gf.offset, tvb(16, 8))
    st:add(gf.acked, tvb(24, 8))
    st:add(gf.size, tvb(32, 8))
    st:add(gf.priority, tvb(40, 4))
    st:add(gf.window, tvb(44, 4))
    st:add(gf.ts, tvb(48, 8))
    local mt = st:add(gf.mech, tvb(56, 8))
    mt:add(gf.mech_upq, tvb(56, 2))
    mt:add(gf.mech_seq, tvb(56, 4))
    mt:add(gf.mech_snt, tvb(60, 4))
    if hl >= 64 and tvb:len() > hl then
        st:add(gf.payload, tvb(hl))
    end
    return tvb:len()
end

local function heur_gs(tvb, pinfo, tree)
    if tvb:len() < 64 or tvb(0, 2):string() ~= "GS" or tvb(2, 1):uint() ~= 1 then return false end
    local ty = tvb(3, 1):uint()
    if ty < 1 or ty > 4 or tvb(6, 2):uint() < 64 then return false end
    gs.dissector(tvb, pinfo, tree)
    return true
end

gs:register_heuristic("udp", heur_gs)
