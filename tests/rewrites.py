"""Rewritten copies (洗稿) for the tests and the benchmark, made without the detector's tools.

The detector folds synonyms with HIT's 同义词词林 (:mod:`tracker.fingerprints.lexicon`). The
rewriter here never reads it: its swaps come from two tables written by hand for this file,
:data:`TABLE_DEV` (the thresholds were set on rewrites made with it) and :data:`TABLE_HELD`
(other synonyms for the same words, more words, other connectives and fillers: a held-out
tool never tuned on). Its operations are its own:

* ``swap(rate)``: that share of the words the table holds replaced by a synonym;
* ``connectives``: connectives and verbs of saying changed (但是→然而, 表示→称);
* ``cut_clauses``: a clause cut from a third of the sentences that have two or more;
* ``reorder``: sentences shuffled inside paragraphs, paragraphs shuffled;
* ``split_merge``: sentences split at a comma, neighbours merged;
* ``own_sentences``: the rewriter's own sentences added (one in four);
* ``dateline``: the dateline dropped, "据…报道，" put in front;
* ``no_runs(n)``: filler words pushed in at word boundaries until no ``n`` characters in a
  row are shared with the original (the rule duplicate checkers count, and 伪原创 tools beat).

Texts are generated here too (:func:`news`, :func:`chapter`): invented names, places and
numbers, in sentences built from a grammar over the tables' words and jieba's dictionary, so
every seed gives another text. Innocent texts: :func:`same_event` (an independent report of a
news item: same names, places and numbers, another writer's sentences), other chapters (same
stock phrases), :func:`commentary` (a short quotation inside commentary).
"""

from __future__ import annotations

import random
import re
from functools import cache
from importlib import resources

import rjieba

# word → (the dev tool's synonym, the held-out tool's synonym)
SYNONYMS = {
    "工人": ("工友", "职工"),
    "城市": ("都市", "城区"),
    "村庄": ("村落", "村子"),
    "房子": ("房屋", "屋子"),
    "道路": ("马路", "路面"),
    "河流": ("河道", "江河"),
    "老人": ("老者", "长者"),
    "孩子": ("小孩", "儿童"),
    "母亲": ("妈妈", "娘亲"),
    "父亲": ("爸爸", "老爹"),
    "朋友": ("友人", "伙伴"),
    "敌人": ("对手", "仇敌"),
    "士兵": ("兵士", "战士"),
    "武器": ("兵器", "器械"),
    "宝剑": ("长剑", "利剑"),
    "山峰": ("山岭", "峰峦"),
    "森林": ("树林", "林子"),
    "天空": ("天际", "苍穹"),
    "消息": ("讯息", "音信"),
    "办法": ("方法", "法子"),
    "时间": ("时光", "光阴"),
    "原因": ("缘故", "缘由"),
    "结果": ("结局", "后果"),
    "目标": ("目的", "宗旨"),
    "计划": ("规划", "方案"),
    "企业": ("公司", "厂商"),
    "学校": ("学堂", "校园"),
    "学生": ("学子", "学员"),
    "老师": ("教师", "先生"),
    "医生": ("大夫", "医师"),
    "病人": ("患者", "病号"),
    "警察": ("民警", "警员"),
    "群众": ("民众", "百姓"),
    "居民": ("住户", "市民"),
    "专家": ("学者", "行家"),
    "会议": ("大会", "会谈"),
    "资金": ("经费", "款项"),
    "费用": ("开销", "花费"),
    "价格": ("价钱", "售价"),
    "事故": ("意外", "事件"),
    "损失": ("损害", "亏损"),
    "洪水": ("大水", "山洪"),
    "看见": ("瞧见", "望见"),
    "告诉": ("告知", "通知"),
    "离开": ("离去", "走开"),
    "到达": ("抵达", "来到"),
    "开始": ("开启", "着手"),
    "结束": ("完结", "终结"),
    "帮助": ("帮忙", "协助"),
    "发现": ("察觉", "发觉"),
    "决定": ("决意", "确定"),
    "喜欢": ("喜爱", "爱好"),
    "担心": ("担忧", "忧虑"),
    "害怕": ("惧怕", "畏惧"),
    "寻找": ("搜寻", "找寻"),
    "攻击": ("进攻", "袭击"),
    "保护": ("守护", "维护"),
    "准备": ("筹备", "预备"),
    "举行": ("举办", "召开"),
    "参加": ("参与", "加入"),
    "提高": ("提升", "增强"),
    "增加": ("增长", "增多"),
    "减少": ("降低", "缩减"),
    "完成": ("达成", "实现"),
    "支持": ("支撑", "拥护"),
    "解决": ("处理", "化解"),
    "建设": ("修建", "兴建"),
    "研究": ("探究", "钻研"),
    "相信": ("信任", "确信"),
    "回答": ("答复", "回应"),
    "询问": ("打听", "探问"),
    "哭泣": ("落泪", "流泪"),
    "奔跑": ("飞奔", "狂奔"),
    "休息": ("歇息", "歇脚"),
    "思考": ("思索", "考虑"),
    "明白": ("懂得", "理解"),
    "恢复": ("复原", "回复"),
    "调查": ("调研", "查询"),
    "救援": ("营救", "援救"),
    "转移": ("疏散", "搬迁"),
    "美丽": ("漂亮", "秀丽"),
    "巨大": ("庞大", "宏大"),
    "重要": ("关键", "要紧"),
    "困难": ("艰难", "艰辛"),
    "安静": ("宁静", "幽静"),
    "热闹": ("喧闹", "繁华"),
    "迅速": ("快速", "飞快"),
    "严重": ("严峻", "厉害"),
    "明显": ("显著", "清楚"),
    "愤怒": ("恼怒", "气愤"),
    "高兴": ("开心", "欢喜"),
    "悲伤": ("伤心", "难过"),
    "勇敢": ("英勇", "果敢"),
    "聪明": ("机灵", "聪慧"),
    "古老": ("陈旧", "久远"),
    "危险": ("凶险", "危急"),
    "寒冷": ("冰冷", "严寒"),
    "温暖": ("暖和", "和煦"),
    "突然": ("忽然", "猛然"),
    "立刻": ("马上", "立即"),
    "周围": ("四周", "附近"),
    "附近": ("周边", "邻近"),
    "地方": ("地区", "区域"),
    "情况": ("状况", "情形"),
    "工作": ("作业", "事务"),
    "生活": ("日子", "生计"),
    "声音": ("响声", "声响"),
    "眼睛": ("双眼", "眼眸"),
    "脸上": ("面上", "脸庞上"),
    "大家": ("众人", "人们"),
    "马上": ("立即", "即刻"),
}
# Connectives and verbs of saying (the held-out tool changes them otherwise, and more).
CONNECTIVES_DEV = {"但是": "然而", "因此": "所以", "而且": "并且", "表示": "称", "认为": "觉得"}
CONNECTIVES_HELD = {
    "但是": "可是",
    "因此": "因而",
    "而且": "况且",
    "表示": "指出",
    "认为": "以为",
    "虽然": "尽管",
    "于是": "随后",
    "已经": "早已",
}
FILLERS_DEV = ("其实", "的确", "真的", "可以说", "事实上", "显然")
FILLERS_HELD = ("说起来", "确实", "总的来说", "毫无疑问", "老实说", "众所周知")
OWN_DEV = (
    "这件事引起了不少人的关注。",
    "对此，网友们议论纷纷。",
    "让我们一起来看看吧。",
    "小编认为这很值得思考。",
)
OWN_HELD = (
    "不知道大家怎么看这件事呢？",
    "欢迎在评论区留言讨论。",
    "这背后的故事令人深思。",
    "更多精彩内容请继续关注。",
)


class Tool:
    """A rewriting tool: its synonym table, connectives, fillers and own sentences."""

    def __init__(self, held_out: bool) -> None:
        k = 1 if held_out else 0
        self.name = "held-out" if held_out else "dev"
        self.synonyms = {w: pair[k] for w, pair in SYNONYMS.items()}
        self.connectives = CONNECTIVES_HELD if held_out else CONNECTIVES_DEV
        self.fillers = FILLERS_HELD if held_out else FILLERS_DEV
        self.own = OWN_HELD if held_out else OWN_DEV


DEV, HELD = Tool(False), Tool(True)

# -------------------------------------------------------------------------- the texts

SURNAMES = "赵钱孙周吴郑冯陈褚卫蒋沈韩杨朱秦尤许何吕施孔曹严华金魏陶姜戚谢邹喻柏窦章云苏潘葛"
GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华玉兰萍红娥玲芬燕彬鹏浩宇轩峰晨辰"
PLACES = (
    "青川县",
    "白河镇",
    "临江市",
    "松岭村",
    "石门县",
    "云溪镇",
    "东湖区",
    "北山乡",
    "南浦市",
    "西岭镇",
    "清水河村",
    "黄石坝",
    "柳林县",
    "金沙镇",
    "龙泉市",
    "凤凰山",
    "桃源乡",
    "望海市",
    "梅岭镇",
    "长风县",
)
ORGS = (
    "市应急管理局",
    "县教育局",
    "红星机械厂",
    "省气象台",
    "市人民医院",
    "长江科技公司",
    "县交通运输局",
    "市体育局",
    "农业科学院",
    "光明食品集团",
    "市消防救援支队",
    "县水利局",
)
STOCK = (
    "说时迟那时快，",
    "只见一道寒光闪过，",
    "欲知后事如何，且听下回分解。",
    "众人面面相觑，谁也没有说话。",
    "一夜无话。",
    "正是：山雨欲来风满楼。",
)


def _name(rng: random.Random) -> str:
    return rng.choice(SURNAMES) + "".join(rng.choice(GIVEN) for _ in range(rng.randint(1, 2)))


def _pick(rng: random.Random, template: str) -> str:
    """``[a|b|c]`` alternatives chosen."""
    return re.sub(r"\[([^\]]*)\]", lambda m: rng.choice(m.group(1).split("|")), template)


@cache
def _dictionary(pos: str) -> tuple[str, ...]:
    """jieba's dictionary words of a part of speech, 2–3 Han characters, common ones."""
    text = resources.files("jieba").joinpath("dict.txt").read_text(encoding="utf-8")
    found = []
    for line in text.splitlines():
        parts = line.split(" ")
        if (
            len(parts) == 3
            and parts[2] == pos
            and 2 <= len(parts[0]) <= 3
            and int(parts[1]) >= 300
            and all("\u4e00" <= c <= "\u9fff" for c in parts[0])
        ):
            found.append(parts[0])
    return tuple(found)


# Facts of one news event, told by two writers: each template uses the facts' slots.
EVENTS = {
    "flood": (
        (
            "{date}，{place}遭遇[强降雨|暴雨]袭击，[河流|河道]水位[迅速|明显]上涨，[洪水|大水]冲毁道路{n1}处。",
            "{org}[立刻|马上]启动应急预案，组织{n2}名[群众|居民]转移到安全地方。",
            "{p1}[告诉|对]记者，[目前|当前]救援工作仍在[紧张|有序]进行，暂无人员伤亡报告。",
            "据[初步|不完全]统计，这次[洪水|灾害]造成的直接经济[损失|亏损]约{n3}万元。",
            "专家[认为|表示]，持续降雨是这次[严重|重大]灾情的[重要|主要]原因。",
            "当地[学校|中小学]已经[决定|宣布]停课{n4}天，[居民|群众]生活物资供应[正常|充足]。",
            "{p2}说，水位退去以后，[恢复|重建]工作将[立刻|马上]开始。",
            "[附近|周围]几个村庄的[老人|老人家]和[孩子|儿童]被优先安置在镇上的[学校|礼堂]里。",
        ),
        (
            "{place}的雨从前一天夜里一直下到{date}中午，城里低洼处积水没过了膝盖。",
            "记者在现场看到，{org}的救援车辆排成长龙，{n2}人连夜撤离家园。",
            "被冲坏的路段共有{n1}处，抢修队伍正在日夜施工。",
            "{p1}介绍说，灾情发生后他们第一时间派出工作组，挨家挨户通知撤离。",
            "初步估算损失达{n3}万元，保险公司已派员到场查勘定损。",
            "镇上的中小学停课{n4}天，教室暂时用作临时安置点。",
            "{p2}在接受采访时提醒市民，汛期尚未结束，出行务必注意安全。",
            "一位撤离的村民说，活了大半辈子，头一回见到这么大的水。",
        ),
    ),
    "factory": (
        (
            "{date}，{org}投资{n3}万元[建设|兴建]的新厂房在{place}正式[投产|开工]。",
            "新厂房占地{n1}亩，[预计|计划]每年可[增加|新增]就业岗位{n2}个。",
            "{p1}在[开工|投产]仪式上[表示|说]，项目将[提高|提升]当地的产业[水平|能力]。",
            "[工人|职工]们[高兴|兴奋]地[告诉|对]记者，在家门口就能找到[工作|活干]。",
            "据[介绍|了解]，工厂[主要|重点]生产农业机械和[配件|零件]，产品销往全国。",
            "{p2}[认为|说]，企业[完成|实现]技术改造后，[价格|成本]将[减少|下降]一成。",
            "[附近|周围]的[村庄|村子]也将[参加|参与]原料供应，带动[居民|群众][增加|提高]收入。",
            "项目[计划|预计]在{n4}个月内[完成|达成]二期[建设|工程]。",
        ),
        (
            "在{place}，一座投资{n3}万元的现代化车间{date}剪彩启用，这是{org}近年来最大的一笔投入。",
            "车间面积达{n1}亩，满负荷运转后能提供{n2}个工作岗位。",
            "{p1}致辞时说，这一项目对优化县域经济结构意义重大。",
            "刚刚入职的年轻人小张笑着说，以后不用再背井离乡外出打工了。",
            "车间主打农机及零部件生产，订单已经排到了明年。",
            "{p2}透露，技改完成后单件成本有望降低百分之十。",
            "厂方与周边农户签订了原料收购协议，预计户均年增收数千元。",
            "按照规划，第二期工程将在{n4}个月后竣工。",
        ),
    ),
    "meeting": (
        (
            "{date}，由{org}主办的[年度|第三届]发展[会议|大会]在{place}[举行|召开]。",
            "来自各地的{n2}名[专家|学者]和企业代表[参加|出席]了[会议|大会]。",
            "{p1}在讲话中[指出|表示]，要[提高|增强][研究|创新]能力，[解决|破解]发展中的[困难|难题]。",
            "[会议|大会]期间共签约项目{n1}个，总[资金|投资]达{n3}万元。",
            "与会[专家|学者][认为|表示]，加强合作是[完成|实现]目标的[重要|关键]途径。",
            "{p2}[告诉|对]记者，下一步将[准备|筹备]更多交流活动。",
            "[会议|大会]为期{n4}天，还[举行|举办]了成果展览和专题论坛。",
        ),
        (
            "为期{n4}天的发展论坛{date}在{place}拉开帷幕，{org}是这次论坛的东道主。",
            "{n2}位嘉宾从全国各地赶来，会场座无虚席。",
            "{p1}开幕致辞时强调，创新能力不足是当前最突出的短板。",
            "论坛上一共有{n1}个合作项目现场签约，金额合计{n3}万元。",
            "多位嘉宾在圆桌对话中谈到，单打独斗难以为继，抱团发展才是出路。",
            "{p2}会后透露，明年还将举办类似的交流活动。",
            "展区里陈列的新产品吸引了不少观众驻足。",
        ),
    ),
    "accident": (
        (
            "{date}，{place}[附近|周边]的[道路|公路]上[发生|出现]一起[交通事故|车祸]，造成{n4}人受伤。",
            "[事故|意外]发生后，[警察|民警]和[医生|医护人员][迅速|立刻][到达|赶到]现场[救援|救治]。",
            "{p1}[告诉|对]记者，受伤[病人|人员]已被送往{org}，[目前|当前]情况[稳定|平稳]。",
            "[事故|意外]造成道路[堵塞|拥堵]{n1}个多小时，[损失|损毁]车辆{n2}辆。",
            "[警察|交警][初步|经过][调查|勘查][认为|发现]，[事故|意外][原因|起因]是雨天路滑车速过快。",
            "{p2}提醒，[寒冷|雨雪]天气出行一定要[减少|降低]车速，[保护|保障]自身安全。",
            "[附近|周围]的[居民|群众]也[参加|加入]了[救援|抢救]，帮助[转移|疏散]受伤人员。",
        ),
        (
            "一场车祸{date}打破了{place}清晨的宁静，{n4}名伤者被困车内。",
            "接到报警后，交警和急救人员十分钟内赶到，破拆车门将伤者救出。",
            "伤者随即被送往{org}，{p1}说他们都已脱离生命危险。",
            "现场一片狼藉，{n2}辆车不同程度受损，交通中断了{n1}个多小时。",
            "交警部门的勘查结果显示，路面湿滑加上超速行驶是肇事主因。",
            "{p2}借此呼吁广大司机，恶劣天气下务必放慢车速。",
            "几位路过的村民主动上前帮忙，把伤者抬到路边避雨。",
        ),
    ),
}

CHAPTER_TEMPLATES = (
    "{H}[迅速|飞快]地[奔跑|冲]到{place}，[看见|发现]{N1}[旁边|边上]站着一个[老人|陌生人]。",
    "[天空|天色][突然|渐渐][暗|阴]了下来，[寒冷|冰冷]的风吹过[森林|山岭]，{H}[担心|害怕]{C}的安危。",
    "{V}冷笑一声，[拿起|拔出][宝剑|武器]，向{H}[攻击|扑]了过去。",
    "{C}[悲伤|伤心]地[哭泣|流着泪]，[告诉|对]{H}说，{N1}的[消息|事情]是真的。",
    "{H}[思考|沉思]了[很久|许久]，终于[明白|想通]了其中的[原因|道理]，[决定|打算]去{place}[寻找|打探]{N2}。",
    "[周围|四周]一片[安静|寂静]，只有[河流|溪水]的[声音|响声]在夜色中回荡。",
    "{V}[愤怒|恼火]地[瞪|看]着{H}，[眼睛|目光]里满是{ADJ}的{N1}。",
    "[大家|众人]都[相信|认为]，只有{H}才能[保护|守住]{place}的[村庄|百姓]。",
    "{H}[勇敢|毫不犹豫]地[挡|站]在{C}面前，[手中|掌中]的{N2}[闪|亮]着[寒光|光芒]。",
    "[第二天|次日]清晨，{H}和{C}[离开|告别]了{place}，[开始|踏上]了新的{N1}。",
    "{C}[询问|问]{H}为什么要[帮助|救]{V}，{H}[回答|答]说，{N2}[重要|要紧]。",
    "[老人|老者][告诉|对]他们，{place}[附近|周围]的{N1}[古老|久远]而[危险|凶险]。",
    "{H}[休息|歇息]了[片刻|一会儿]，[感觉|觉得]体力[恢复|好]了[一些|不少]。",
    "{V}的[士兵|手下][包围|围住]了{place}，[群众|百姓]们[害怕|惊恐]地[躲|藏]进了[房子|屋里]。",
    "[夕阳|阳光][照|洒]在{C}[美丽|清秀]的[脸上|面庞上]，{H}[突然|一时间][明白|懂得]了{ADJ}的{N2}。",
    "{H}[举起|挥动]{N1}，[大声|高声]喊道：“谁敢[伤害|动]{C}，我绝不[放过|饶]他！”",
    "{V}[计划|打算]在{n1}天之内[攻下|夺取]{place}，[然后|再][寻找|追查]{N2}的下落。",
    "[这|那]一[夜|晚]，{H}[辗转反侧|彻夜难眠]，[脑海|心]里全是{C}的[身影|样子]。",
)


def _fill(rng: random.Random, template: str, slots: dict[str, str]) -> str:
    nouns, adjectives = _dictionary("n"), _dictionary("a")
    extra = {
        "N1": rng.choice(nouns),
        "N2": rng.choice(nouns),
        "ADJ": rng.choice(adjectives),
        "n1": str(rng.randint(2, 30)),
    }
    return _pick(rng, template).format(**{**extra, **slots})


def _facts(rng: random.Random) -> dict[str, str]:
    year, month, day = rng.randint(2015, 2025), rng.randint(1, 12), rng.randint(1, 28)
    return {
        "date": f"{year}年{month}月{day}日",
        "place": rng.choice(PLACES),
        "org": rng.choice(ORGS),
        "p1": _name(rng),
        "p2": _name(rng),
        "n1": str(rng.randint(3, 60)),
        "n2": str(rng.randint(120, 3000)),
        "n3": str(rng.randint(200, 90000)),
        "n4": str(rng.randint(2, 9)),
    }


def news(
    seed: int, facts: dict[str, str] | None = None, writer: int = 0, kind: str | None = None
) -> str:
    """A news article: a dateline, then four sentences of one event's ``writer`` (its
    formulas: other articles of the kind share them) and six of the free grammar about the
    event's people and places, in a random order and choice of words, in 2–4 paragraphs."""
    rng = random.Random(seed)
    kind = kind or rng.choice(sorted(EVENTS))
    facts = facts or _facts(rng)
    pool = list(EVENTS[kind][writer])
    rng.shuffle(pool)
    sentences = [_pick(rng, t).format(**facts) for t in pool[:4]]
    people = {"H": facts["p1"], "C": facts["p2"], "V": facts["org"]}
    for _ in range(6):
        sentences.insert(rng.randint(1, len(sentences)), _free(rng, people))
    sentences = [s if s.endswith(("。", "！", "？", "”")) else s + "。" for s in sentences]
    cuts = sorted(rng.sample(range(1, len(sentences)), rng.randint(1, 3)))
    paragraphs = [
        "".join(sentences[a:b]) for a, b in zip([0, *cuts], [*cuts, len(sentences)], strict=True)
    ]
    paragraphs[0] = f"本报{facts['place']}讯（记者 {_name(rng)}）" + paragraphs[0]
    return "\n".join(paragraphs)


def event_of(seed: int) -> tuple[str, dict[str, str]]:
    """The kind and facts of :func:`news` of ``seed`` (for an independent report of it)."""
    rng = random.Random(seed)
    kind = rng.choice(sorted(EVENTS))
    return kind, _facts(rng)


def same_event(seed: int, other_seed: int) -> str:
    """Another writer's report of the event of :func:`news` of ``seed``: the same names,
    places and numbers, written otherwise."""
    kind, facts = event_of(seed)
    text = news(1_000_003 + other_seed, facts, writer=1, kind=kind)
    return text.replace("本报", "本刊", 1) if other_seed % 2 else text


FREE_TEMPLATES = (
    "{S}{ADV}{V1}了{N1}，{V2}{ADJ}的{N2}。",
    "{S}{V1}{N1}的时候，{S2}正在{V2}{N2}。",
    "{ADJ}的{N1}{ADV}{V1}，{S}{V2}着{N2}，{V3}了很久。",
    "{S}把{N1}{V1}在{N2}上，{ADV}{V2}道：“{N3}{ADJ}！”",
    "{N1}和{N2}{V1}在一起，{S}{V2}{ADJ}的{N3}。",
    "{S}{V1}，{S2}{V2}，{N1}{ADV}{ADJ}起来。",
)


def _free(rng: random.Random, slots: dict[str, str]) -> str:
    """A sentence of the free grammar: words drawn from the swap table's (two in five) and
    from jieba's dictionary, so two chapters rarely share one."""
    table = list(SYNONYMS)

    def word(pos: str) -> str:
        return rng.choice(table) if rng.random() < 0.4 else rng.choice(_dictionary(pos))

    people = [slots["H"], slots["C"], slots["V"], "他", "她", "老人", "众人"]
    fill = {
        "S": rng.choice(people),
        "S2": rng.choice(people),
        "ADV": rng.choice(("", "慢慢地", "默默地", "忽然", "一下子", "终于", "仍然")),
        "ADJ": word("a"),
        **{f"V{k}": word("v") for k in (1, 2, 3)},
        **{f"N{k}": word("n") for k in (1, 2, 3)},
    }
    return rng.choice(FREE_TEMPLATES).format(**fill)


def chapter(seed: int, sentences: int = 45) -> str:
    """A chapter of a wuxia-like novel: invented heroes and places; sentences of five of the
    grammar's templates above (tropes every chapter may share) and of a free grammar over
    dictionary words; stock phrases here and there."""
    rng = random.Random(seed)
    slots = {"H": _name(rng), "C": _name(rng), "V": _name(rng), "place": rng.choice(PLACES)}
    mine = rng.sample(CHAPTER_TEMPLATES, 5)
    out, paragraph = [], []
    for _ in range(sentences):
        if rng.random() < 0.08:
            paragraph.append(rng.choice(STOCK))
        if rng.random() < 0.35:
            paragraph.append(_fill(rng, rng.choice(mine), slots))
        else:
            paragraph.append(_free(rng, slots))
        if len(paragraph) >= rng.randint(3, 6):
            out.append("".join(paragraph))
            paragraph = []
    if paragraph:
        out.append("".join(paragraph))
    return "\n".join(out)


def commentary(seed: int, quoted: str) -> str:
    """A commentary of ~600 characters quoting one sentence of ``quoted``."""
    rng = random.Random(seed)
    sentence = rng.choice(_sentences(quoted.replace("\n", "")))
    own = chapter(seed + 99_991, 14).replace("\n", "")
    return f"{own[:300]}正如原文所说：“{sentence}”{own[300:]}"


# ------------------------------------------------------------------------ rewriting

_SENTENCE = re.compile(r"[^。！？]+[。！？]?")


def _sentences(paragraph: str) -> list[str]:
    return [s for s in _SENTENCE.findall(paragraph) if s.strip()]


def swap(text: str, rng: random.Random, tool: Tool, rate: float) -> str:
    """``rate`` of the words the tool's table holds swapped (words cut by jieba, a segmenter
    the rewriters use too)."""
    return "".join(
        tool.synonyms[w] if w in tool.synonyms and rng.random() < rate else w
        for w in rjieba.cut(text, False)
    )


def connectives(text: str, rng: random.Random, tool: Tool) -> str:
    return "".join(tool.connectives.get(w, w) for w in rjieba.cut(text, False))


def cut_clauses(text: str, rng: random.Random) -> str:
    out = []
    for paragraph in text.split("\n"):
        kept = []
        for s in _sentences(paragraph):
            clauses = s.split("，")
            if len(clauses) >= 3 and rng.random() < 0.34:
                del clauses[rng.randrange(1, len(clauses) - 1)]
            kept.append("，".join(clauses))
        out.append("".join(kept))
    return "\n".join(out)


def reorder(text: str, rng: random.Random) -> str:
    paragraphs = []
    for paragraph in text.split("\n"):
        parts = _sentences(paragraph)
        rng.shuffle(parts)
        paragraphs.append("".join(parts))
    rng.shuffle(paragraphs)
    return "\n".join(paragraphs)


def split_merge(text: str, rng: random.Random) -> str:
    out = []
    for paragraph in text.split("\n"):
        parts, done = _sentences(paragraph), []
        k = 0
        while k < len(parts):
            s = parts[k]
            if "，" in s and rng.random() < 0.3:  # split at its first comma
                head, _, tail = s.partition("，")
                done += [head + "。", tail]
            elif k + 1 < len(parts) and rng.random() < 0.3:  # merged with the next
                done.append(s.rstrip("。！？") + "，" + parts[k + 1])
                k += 1
            else:
                done.append(s)
            k += 1
        out.append("".join(done))
    return "\n".join(out)


def own_sentences(text: str, rng: random.Random, tool: Tool) -> str:
    out = []
    for paragraph in text.split("\n"):
        parts = _sentences(paragraph)
        for _ in range(max(1, len(parts) // 4)):
            parts.insert(rng.randint(0, len(parts)), rng.choice(tool.own))
        out.append("".join(parts))
    return "\n".join(out)


def dateline(text: str, rng: random.Random) -> str:
    body = re.sub(r"^本报[^（]*讯（记者 [^）]*）", "", text)
    return f"据{rng.choice(('新华社', '中新网', '本地媒体', '央视新闻'))}报道，" + body


def _han(text: str) -> str:
    return "".join(ch for ch in text if "\u4e00" <= ch <= "\u9fff" or ch.isalnum())


def longest_shared_run(copy: str, original: str) -> int:
    """The longest run of characters (Han, letters, digits; punctuation left out) shared."""
    a, b = _han(copy), _han(original)
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # binary search on the run length
        mid = (lo + hi + 1) // 2
        grams = {b[i : i + mid] for i in range(len(b) - mid + 1)}
        if any(a[i : i + mid] in grams for i in range(len(a) - mid + 1)):
            lo = mid
        else:
            hi = mid - 1
    return lo


def no_runs(text: str, original: str, rng: random.Random, tool: Tool, n: int) -> str:
    """Fillers pushed in at word boundaries until no ``n`` characters in a row (punctuation
    left out) are shared with ``original``."""
    base = _han(original)
    grams = {base[i : i + n] for i in range(len(base) - n + 1)}
    words = rjieba.cut(text, False)
    out: list[str] = []
    run = ""  # the characters since the last filler or punctuation
    for w in words:
        han = _han(w)
        if not han:
            out.append(w)
            continue
        candidate = run + han
        if any(candidate[i : i + n] in grams for i in range(max(0, len(candidate) - n + 1))):
            out.append(rng.choice(tool.fillers))
            run = han
        else:
            run = candidate[-(n - 1) :] if n > 1 else ""
        out.append(w)
        # a single word of n characters or more shared with the original cannot be broken
        # at a word boundary: cut it in the middle
        if len(han) >= n and any(han[i : i + n] in grams for i in range(len(han) - n + 1)):
            out[-1] = w[: len(w) // 2] + rng.choice(tool.fillers) + w[len(w) // 2 :]
            run = _han(w[len(w) // 2 :])
    return "".join(out)


#: Strength → the operations, in order (each a function of the text and the tool).
STRENGTHS = ("light", "medium", "no13", "no8")


def rewrite(text: str, seed: int, tool: Tool, strength: str, operation: str = "all") -> str:
    """``text`` rewritten by ``tool`` at ``strength``; ``operation``: only that one (with the
    synonym swaps of the strength), or ``all`` of them."""
    rng = random.Random(seed)
    rate = {"light": 0.3, "medium": 0.6, "no13": 0.8, "no8": 0.9}[strength]
    out = swap(text, rng, tool, rate)
    ops = {
        "connectives": lambda t: connectives(t, rng, tool),
        "cut_clauses": lambda t: cut_clauses(t, rng),
        "reorder": lambda t: reorder(t, rng),
        "split_merge": lambda t: split_merge(t, rng),
        "own_sentences": lambda t: own_sentences(t, rng, tool),
        "dateline": lambda t: dateline(t, rng) if t.startswith("本报") else t,
    }
    chosen = ops if operation == "all" else {k: v for k, v in ops.items() if k == operation}
    if strength == "light" and operation == "all":
        chosen = {k: ops[k] for k in ("connectives", "dateline")}
    for op in chosen.values():
        out = op(out)
    if strength in ("no13", "no8"):
        n = 13 if strength == "no13" else 8
        for _ in range(6):  # a filler may itself close a run: again until none is left
            if longest_shared_run(out, text) < n:
                break
            out = no_runs(out, text, rng, tool, n)
    return out


OPERATIONS = (
    "swap",
    "connectives",
    "cut_clauses",
    "reorder",
    "split_merge",
    "own_sentences",
    "dateline",
    "all",
)


def embed(inner: str, filler: str, rng: random.Random) -> str:
    """``inner`` put between two paragraphs of ``filler``."""
    paragraphs = filler.split("\n")
    k = rng.randint(0, len(paragraphs))
    return "\n".join([*paragraphs[:k], inner, *paragraphs[k:]])


def part(text: str, share: float, rng: random.Random) -> str:
    """A run of whole paragraphs (or sentences) of ``text`` making ``share`` of it."""
    sentences = _sentences(text.replace("\n", ""))
    count = max(1, round(len(sentences) * share))
    start = rng.randint(0, len(sentences) - count)
    return "".join(sentences[start : start + count])
