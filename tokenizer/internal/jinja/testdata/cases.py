"""Template cases for gen_cases.py: (name, template, variables)."""

MSGS = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Hi there"},
    {"role": "assistant", "content": "Hello! How can I help?"},
    {"role": "user", "content": "What's 2+2?"},
]
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city, in °C",
     "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City \"name\""},
     "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "description": "Add numbers <fast>",
     "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "integer", "default": 0}}}}},
]
TOOL_MSGS = [
    {"role": "user", "content": "Weather in Paris and Köln?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}},
        {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Köln\"}"}}]},
    {"role": "tool", "content": "{\"temp\": 21.5}"},
    {"role": "tool", "content": "{\"temp\": 18}"},
    {"role": "assistant", "content": "<think>\nCompare.\n</think>\n\nParis is warmer."},
    {"role": "user", "content": "<tool_response>x</tool_response>"},
]

QWEN25 = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""

LLAMA31 = r"""{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = strftime_now("%d %b %Y") %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\n\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
"""

MISTRAL = r"""{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\n\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token}}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}
"""

GEMMA = r"""{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '
' + message['content'] | trim + '<end_of_turn>
' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model
'}}{% endif %}"""

DEEPSEEK = r"""{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='', is_first_sp=true) %}{%- for message in messages %}{%- if message['role'] == 'system' %}{%- if ns.is_first_sp %}{% set ns.system_prompt = ns.system_prompt + message['content'] %}{% set ns.is_first_sp = false %}{%- else %}{% set ns.system_prompt = ns.system_prompt + '\n\n' + message['content'] %}{%- endif %}{%- endif %}{%- endfor %}{{ bos_token }}{{ ns.system_prompt }}{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'<｜User｜>' + message['content']}}{%- endif %}{%- if message['role'] == 'assistant' and 'tool_calls' in message %}{%- set ns.is_tool = false -%}{%- for tool in message['tool_calls'] %}{%- if not ns.is_first %}{%- if message['content'] is none %}{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments']|tojson + '\n' + '```' + '<｜tool▁call▁end｜>'}}{%- else %}{{'<｜Assistant｜>' + message['content'] + '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments']|tojson + '\n' + '```' + '<｜tool▁call▁end｜>'}}{%- endif %}{%- set ns.is_first = true -%}{%- else %}{{'\n' + '<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments']|tojson + '\n' + '```' + '<｜tool▁call▁end｜>'}}{%- endif %}{%- endfor %}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}{%- endif %}{%- if message['role'] == 'assistant' and 'tool_calls' not in message %}{%- if ns.is_tool %}{{'<｜tool▁outputs▁end｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}{%- set ns.is_tool = false -%}{%- else %}{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endif %}{%- if message['role'] == 'tool' %}{%- set ns.is_tool = true -%}{%- if ns.is_output_first %}{{'<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- set ns.is_output_first = false %}{%- else %}{{'<｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- endif %}{%- endif %}{%- endfor -%}{% if ns.is_tool %}{{'<｜tool▁outputs▁end｜>'}}{% endif %}{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜><think>\n'}}{% endif %}"""

MACROS = r"""{%- macro render_content(content, sep=', ') -%}
{%- if content is string -%}
{{ content }}
{%- else -%}
{%- for part in content -%}
{%- if part.type == 'text' %}{{ part.text }}{% elif part.type == 'image' %}<image>{% endif -%}
{%- if not loop.last %}{{ sep }}{% endif -%}
{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- macro fact(n) -%}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{%- endmacro -%}
{%- for m in messages %}
<{{ m.role }}>{{ render_content(m.content) }}|{{ render_content(m.content, sep=' + ') }}</{{ m.role }}>
{% endfor %}
{{ fact(10) }}"""

TEMPLATES = [
    ("qwen25", QWEN25), ("llama31", LLAMA31), ("mistral", MISTRAL), ("gemma", GEMMA), ("deepseek", DEEPSEEK),
]

CASES = [
    # Numbers and Python repr.
    ("numbers", "{{ 1 }}|{{ 1.0 }}|{{ -0.0 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 1.5e-7 }}|{{ 0.0001 }}|{{ 0.00001 }}|{{ 123456789.123 }}|{{ 0.1 + 0.2 }}|{{ 2**62 }}|{{ 10/4 }}|{{ 10//4 }}|{{ -7//2 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 7.5 % 2 }}|{{ 2 ** -1 }}|{{ 1_000 }}|{{ 0x1F }}|{{ 0b101 }}|{{ 0o17 }}|{{ 3 * 1.5 }}|{{ true + 1 }}|{{ 1e100 }}|{{ 5 / 5 }}", {}),
    ("constants", "{{ none }}|{{ None }}|{{ true }}|{{ False }}|{{ [] }}|{{ {} }}|{{ () }}|{{ (1,) }}|{{ (1, 'a') }}|{{ [1, 'a', none, true, 1.5, [2], {'k': 'v'}] }}|{{ 1, 2 }}", {}),
    ("repr strings", "{{ ['it\\'s', \"say \\\"hi\\\"\", 'both \\' \"', 'tab\\t', 'nl\\n', 'uni é 中 😀', '\\x00\\x7f\\xa0', '\\\\'] }}", {}),
    ("string literals", "{{ 'a\\nb' }}|{{ \"q\\\"q\" }}|{{ '\\u00e9\\x41\\101' }}|{{ 'back\\\\slash' }}|{{ 'keep \\d' }}|{{ 'adj' 'acent' }}|{{ '\\U0001F600' }}", {}),
    ("vars repr", "{{ d }}|{{ l }}|{{ f }}|{{ i }}|{{ s }}|{{ n }}|{{ b }}", {"d": {"z": 1, "a": [1.0, 2.5e-5, None], "m": {"x": "y"}}, "l": [1, "two", 3.0], "f": 2.0, "i": -3, "s": "str", "n": None, "b": False}),
    # Whitespace control.
    ("ws lstrip trim", "a\n  {% if true %}\n  b\n  {% endif %}\n  c\n", {}),
    ("ws minus", "a {%- if true -%} b {%- endif -%} c", {}),
    ("ws plus", "a\n  {%+ if true %}x{% endif %}\n", {}),
    ("ws variable", "  {{ 'x' }}  \n  {# comment #}\n  y", {}),
    ("ws loop", "{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n", {}),
    ("ws comment minus", "x  {#- c -#}  y", {}),
    ("ws plus end", "{% if true +%}\nA{% endif %}", {}),
    ("ws tabs", "\t{% if true %}\tz{% endif %}", {}),
    ("ws crlf", "line\r\nwin\r\n{% if true %}\r\nok{% endif %}\r\n", {}),
    ("raw", "{% raw %}{{ not parsed }} {% if %}{% endraw %}", {}),
    ("raw ws", "  {% raw %}  x  {% endraw %}  \nend", {}),
    ("var minus", "{{- ' a ' -}}  \n  {{ 'b' }}", {}),
    ("trailing newline", "no trailing\n", {}),
    ("two newlines", "two\n\n", {}),
    ("minus then lstrip", "{%- if true %}   \n   yes{% endif %}", {}),
    ("lstrip not at line start", "x  {% if true %}y{% endif %}", {}),
    ("lstrip first line", "   {% if true %}y{% endif %}", {}),
    ("comment trim", "a\n{# note #}\nb\n  {#- x #}\nc", {}),
    ("nested ws", "{% for m in ms %}\n    {% if m %}\n        [{{ m }}]\n    {% endif %}\n{% endfor %}", {"ms": [1, 0, 2]}),
    ("unicode spaces", "\u3000{% if true %}x{% endif %}\u00a0 {{- 'y' }}", {}),
    # Scoping.
    ("scope loop", "{% set x = 0 %}{% for i in [1,2] %}[{{ x }}]{% set x = i %}({{ x }}){% endfor %}{{ x }}", {}),
    ("scope if", "{% set x = 0 %}{% if true %}{% set x = 5 %}{% endif %}{{ x }}", {}),
    ("scope leak", "{% for i in [1,2] %}{% set y = i %}{% endfor %}[{{ y }}]", {}),
    ("scope if in loop", "{% for i in [1,2] %}{% if loop.first %}{% set y = 7 %}{% endif %}{{ y }}{% endfor %}", {}),
    ("namespace", "{% set ns = namespace(a=1, b=[]) %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}{{ ns.b }}{{ ns.c is defined }}", {}),
    ("namespace dict", "{% set ns = namespace({'k': 1}, z=2) %}{{ ns.k }}{{ ns.z }}", {}),
    ("set tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = 3, 4 %}{{ c }}", {}),
    ("set block", "{% set x %}Hello {{ name }}!{% endset %}[{{ x }}]{% set y | upper %}shout{% endset %}{{ y }}", {"name": "Ann"}),
    ("with", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
    ("filter block", "{% filter upper %}hello {{ 'x' }}{% endfilter %}|{% filter trim %}  pad  {% endfilter %}", {}),
    ("var shadow", "{% set messages = messages[1:] %}{{ messages|length }}", {"messages": [1, 2, 3]}),
    # Loops.
    ("loop vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", {}),
    ("loop prev next", "{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}", {}),
    ("loop cycle changed", "{% for x in [1,1,2,3,3] %}{{ loop.cycle('a','b') }}{% if loop.changed(x) %}!{% endif %}{% endfor %}", {}),
    ("loop unpack", "{% for a, b in [[1,2],[3,4]] %}{{ a }}{{ b }}{% endfor %}{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("loop else", "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}|{% for x in [1] if x > 5 %}{{ x }}{% else %}none{% endfor %}", {}),
    ("loop filter", "{% for x in range(10) if x is odd %}{{ x }}/{{ loop.length }} {% endfor %}", {}),
    ("loop break continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("nested loops", "{% for a in [1,2] %}{% set outer = loop %}{% for b in 'xy' %}{{ outer.index }}{{ loop.index }}{{ b }} {% endfor %}{% endfor %}", {}),
    ("loop over undefined", "{% for x in nothing %}{{ x }}{% endfor %}ok", {}),
    ("loop string", "{% for c in 'héllo' %}[{{ c }}]{% endfor %}", {}),
    ("range", "{{ range(5)|list }}{{ range(2, 8, 3)|list }}{{ range(5, 0, -2)|list }}", {}),
    # Expressions.
    ("compare chain", "{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ 1 == 1.0 }}{{ 'a' != 'b' }}{{ 'abc' < 'abd' }}{{ [1,2] < [1,3] }}{{ none == none }}{{ true == 1 }}", {}),
    ("in", "{{ 'a' in 'cat' }}{{ 2 in [1,2] }}{{ 'k' in {'k': 1} }}{{ 'z' not in 'cat' }}{{ 3 not in [1] }}{{ 'x' in nothing }}", {}),
    ("concat", "{{ 'a' ~ 1 ~ none ~ true ~ 1.5 ~ [1] ~ nothing }}", {}),
    ("cond expr", "{{ 'yes' if true else 'no' }}|{{ 'yes' if false else 'no' }}|{{ 'x' if false }}|{{ (1 if false) is defined }}|{{ 'a' if 0 else 'b' if 1 else 'c' }}", {}),
    ("and or", "{{ 0 or 'x' }}|{{ 1 and 'y' }}|{{ '' or none }}|{{ [] and 1 }}|{{ not none }}|{{ not 'a' }}|{{ nothing or 'dflt' }}", {}),
    ("arith strings lists", "{{ 'ab' * 3 }}|{{ 2 * 'x' }}|{{ [1] * 2 }}|{{ [1] + [2] }}|{{ 'a' + 'b' }}|{{ (1,) + (2,) }}|{{ -(3) }}|{{ +4 }}|{{ - 2 ** 2 }}", {}),
    ("percent format", "{{ '%s-%d' % ('a', 3) }}|{{ '%s' % 'x' }}|{{ '100%%' % () }}|{{ '%r' % 'q' }}", {}),
    ("slicing", "{{ l[::-1] }}{{ l[1:] }}{{ l[:-1] }}{{ l[::2] }}{{ l[-2:] }}{{ l[5:] }}{{ l[1:3] }}{{ l[-10:2] }}{{ l[3:0:-1] }}|{{ s[::-1] }}|{{ s[1:3] }}|{{ s[-1] }}|{{ s[0] }}", {"l": [1, 2, 3, 4], "s": "héllo"}),
    ("indexing", "{{ l[0] }}{{ l[-1] }}[{{ l[9] }}]{{ d['a'] }}{{ d.a }}[{{ d.zz }}]{{ d['n'][1] }}{{ l.1 }}[{{ none.x }}]", {"l": [1, 2], "d": {"a": "A", "n": [5, 6]}}),
    ("dict attr vs method", "{{ d.items()|list }}|{{ d['items'] }}|{{ d.get('zz', 'dflt') }}|{{ d.get('k') }}|{{ d.keys()|list }}|{{ d.values()|list }}", {"d": {"k": 1, "items": "I"}}),
    ("dict literal", "{% set d = {'b': 1, 'a': 2, 3: 'three'} %}{{ d }}{{ d[3] }}{{ d|length }}", {}),
    ("is tests", "{{ x is defined }}{{ y is undefined }}{{ n is none }}{{ s is string }}{{ d is mapping }}{{ l is sequence }}{{ i is integer }}{{ f is float }}{{ i is number }}{{ t is boolean }}{{ t is true }}{{ t is false }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 'a' is in 'abc' }}{{ 1 is eq 1 }}{{ 2 is gt 1 }}{{ s is lower }}{{ 'AB' is upper }}{{ l is iterable }}{{ range is callable }}{{ n is sameas none }}{{ i is not string }}{{ t is integer }}", {"x": 1, "n": None, "s": "abc", "d": {}, "l": [1], "i": 3, "f": 1.5, "t": True}),
    ("test precedence", "{{ not x is defined }}|{{ x is defined and y is not defined }}|{{ 'a' if x is defined else 'b' }}", {"x": 1}),
    # Filters.
    ("filters basic", "{{ 'hELLo wORLD'|upper }}|{{ 'HeLLo'|lower }}|{{ 'hello world'|title }}|{{ \"they're bill's\"|title }}|{{ 'hELLO'|capitalize }}|{{ '  pad  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 42|string }}|{{ [1,2]|length }}|{{ 'héllo'|length }}|{{ {'a':1}|count }}|{{ nothing|length }}", {}),
    ("filters seq", "{{ [3,1,2]|sort }}|{{ [3,1,2]|sort(reverse=true) }}|{{ ['b','A','c']|sort }}|{{ ['b','A','c']|sort(case_sensitive=true) }}|{{ [1,2,3]|first }}|{{ [1,2,3]|last }}|{{ 'abc'|list }}|{{ [1,2,3]|reverse|list }}|{{ 'abc'|reverse }}|{{ [1,2,2,3,1]|unique|list }}|{{ [4,2,8]|max }}|{{ [4,2,8]|min }}|{{ [1,2,3]|sum }}|{{ [1.5,2]|sum(start=1) }}", {}),
    ("filters join map select", "{{ [1,2,3]|join(', ') }}|{{ users|map(attribute='name')|join('/') }}|{{ users|selectattr('admin')|map(attribute='name')|list }}|{{ users|rejectattr('admin')|list|length }}|{{ [1,2,3,4]|select('odd')|list }}|{{ [1,2,3,4]|reject('odd')|list }}|{{ ['a','b']|map('upper')|list }}|{{ users|join(',', attribute='name') }}|{{ users|selectattr('name', 'equalto', 'bo')|list }}|{{ users|map(attribute='age', default=0)|list }}", {"users": [{"name": "al", "admin": True, "age": 30}, {"name": "bo", "admin": False}]}),
    ("filters default", "{{ nothing|default('d') }}|{{ ''|default('d') }}|{{ ''|default('d', true) }}|{{ none|default('d') }}|{{ nothing|d('x') }}|{{ 0|default(5, boolean=true) }}", {}),
    ("filters numbers", "{{ '42'|int }}|{{ 'x'|int }}|{{ 'x'|int(7) }}|{{ 3.9|int }}|{{ '3.5'|float }}|{{ 2|float }}|{{ -3|abs }}|{{ 2.567|round(2) }}|{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.1|round(0, 'ceil') }}|{{ '0x1A'|int(0, 16) }}|{{ ' 12 '|int }}", {}),
    ("filters items dictsort", "{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}|{{ d|dictsort }}|{{ d|dictsort(by='value') }}|{{ d|dictsort(reverse=true) }}", {"d": {"b": 2, "a": 3, "C": 1}}),
    ("filters indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('> ', blank=true) }}", {}),
    ("filters misc", "{{ 'a<b>&\"\\''|e }}|{{ '%s=%s'|format('k', 1) }}|{{ 'a b  c'|wordcount }}|{{ 'abc'|center(9) }}|{{ d|attr('x') }}|{{ 'x y x'|replace('x', 'z') }}|{{ 'x y x'|replace('x', 'z', 1) }}|{{ 'safe'|safe }}", {"d": {"x": 9}}),
    # tojson.
    ("tojson", "{{ v|tojson }}", {"v": {"b": 1, "a": [1, 2.5, None, True, False, "é\n\"<>'&\t\u0001\u007f", {}, []], "u": "😀中", "f": 1.0, "big": 12345678901234, "neg": -0.5, "exp": 1e20}}),
    ("tojson indent", "{{ v|tojson(indent=2) }}|{{ v|tojson(indent='\\t') }}|{{ v|tojson(indent=0) }}", {"v": {"b": 1, "a": [1, {"x": []}, {}]}}),
    ("tojson options", "{{ v|tojson(sort_keys=true) }}|{{ v|tojson(separators=(',', ':')) }}|{{ v|tojson(ensure_ascii=true) }}", {"v": {"z": "é😀", "a": [1, 2]}}),
    ("tojson scalars", "{{ 1|tojson }}{{ 'x'|tojson }}{{ none|tojson }}{{ (1, 2)|tojson }}{{ {1: 'a', true: 'b', none: 'c'}|tojson }}{{ 1.5|tojson }}", {}),
    ("tojson undefined", "{{ nothing|tojson }}", {}),
    # String methods.
    ("str methods", "{{ s.startswith('He') }}{{ s.endswith(('x', 'ld')) }}{{ s.split() }}{{ s.split('l') }}{{ s.split('l', 1) }}{{ s.rsplit('l', 1) }}{{ '  x  '.strip() }}|{{ '  x  '.lstrip() }}|{{ '  x  '.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ s.replace('l', 'L') }}{{ s.upper() }}{{ s.lower() }}{{ 'hello world'.title() }}{{ 'hELLO'.capitalize() }}{{ s.find('o') }}{{ s.rfind('o') }}{{ s.find('z') }}{{ s.count('l') }}{{ ', '.join(['a','b']) }}{{ '12'.isdigit() }}{{ 'ab'.isalpha() }}{{ ' '.isspace() }}{{ 'a\\nb\\r\\nc'.splitlines() }}{{ 'pre_x'.removeprefix('pre_') }}{{ '{} and {}'.format(1, 'b') }}{{ '{0}{name}'.format('x', name='y') }}", {"s": "Hello world"}),
    ("split think", "{% set c = m.split('</think>')[-1].lstrip('\\n') %}[{{ c }}]{% set r = m.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}[{{ r }}]", {"m": "<think>\nreason\n</think>\n\nanswer"}),
    ("unicode case", "{{ 'ß'|upper }}|{{ 'İ'|lower|length }}|{{ 'ΣΑΣ'|lower }}|{{ 'ǆ'|capitalize }}", {}),
    # Macros.
    ("macros", MACROS, {"messages": [{"role": "user", "content": "plain"}, {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}]}),
    ("macro varargs kwargs", "{% macro m(a, b=2) %}{{ a }}{{ b }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1) }}|{{ m(1, 3, 4, 5) }}|{{ m(1, z=9) }}|{{ m(b=7, a=6) }}", {}),
    ("macro scope", "{% set g = 'G' %}{% macro m() %}{{ g }}{{ param }}{% endmacro %}{{ m() }}", {"param": "P"}),
    # Globals and errors.
    ("raise", "{{ raise_exception('bad role') }}", {}),
    ("strftime", "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M:%S %A %B %j %p %I') }}", {}),
    ("undefined attr error", "{{ x.y }}", {}),
    ("undefined nested error", "{{ d.a.b }}", {"d": {}}),
    ("type error", "{{ 'a' + 1 }}", {}),
    ("compare error", "{{ 1 < 'a' }}", {}),
    ("unsafe append", "{{ [1].append(2) }}", {}),
    ("unsafe print", "[{{ [1].append }}][{{ 'abc'.append }}]", {}),
    ("dunder", "[{{ ''.__class__ }}]", {}),
    ("unknown filter", "{{ x|nosuchfilter }}", {}),
    ("unknown tag", "{% nosuchtag %}", {}),
    ("missing endif", "{% if true %}x", {}),
    ("bad expression", "{{ 1 + }}", {}),
    ("assign nonnamespace", "{% set d = {} %}{% set d.x = 1 %}", {}),
    ("division by zero", "{{ 1 / 0 }}", {}),
    ("unpack error", "{% for a, b in [[1,2,3]] %}{% endfor %}", {}),
    ("not iterable", "{% for x in 5 %}{% endfor %}", {}),
    ("generation tag", "{% for m in ms %}{% generation %}<{{ m }}>{% endgeneration %}{% endfor %}", {"ms": ["a", "b"]}),
    ("print tag", "{% print 'hi' %}{% print 1, 2 %}", {}),
    ("content parts", "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}{% if p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}\n{% endfor %}", {"messages": [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}]}, {"role": "assistant", "content": "ok"}]}),
]

for name, tmpl in TEMPLATES:
    for agp in (True, False):
        CASES.append((f"{name} plain agp={agp}", tmpl, {"messages": MSGS, "add_generation_prompt": agp, "bos_token": "<s>", "eos_token": "</s>"}))
    CASES.append((f"{name} tools", tmpl, {"messages": TOOL_MSGS, "tools": TOOLS, "add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>"}))
    CASES.append((f"{name} no system", tmpl, {"messages": MSGS[1:], "add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>"}))
    CASES.append((f"{name} bad roles", tmpl, {"messages": [MSGS[1], MSGS[1]], "bos_token": "<s>", "eos_token": "</s>"}))
CASES.append(("llama31 single tool call", LLAMA31, {"messages": [{"role": "user", "content": "w?"}, {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo", "n": 1.0}}}]}, {"role": "tool", "content": {"temp": 3}}], "tools": TOOLS, "bos_token": "<|begin_of_text|>", "builtin_tools": ["code_interpreter", "brave_search"]}))
CASES.append(("llama31 date", LLAMA31, {"messages": MSGS, "date_string": "01 Jan 2025", "tools_in_user_message": False, "tools": TOOLS, "bos_token": "B"}))

# Scoping subtleties.
CASES += [
    ("macro sees later set", "{% macro m() %}[{{ x }}]{% endmacro %}{% set x = 1 %}{{ m() }}", {}),
    ("macro in loop", "{% for i in [1, 2] %}{% macro m() %}<{{ i }}>{% endmacro %}{{ m() }}{% endfor %}", {}),
    ("macro local set", "{% set x = 1 %}{% macro m() %}{% set x = 2 %}{{ x }}{% endmacro %}{{ m() }}{{ x }}", {}),
    ("macro namespace", "{% set ns = namespace(n=0) %}{% macro inc() %}{% set ns.n = ns.n + 1 %}{% endmacro %}{{ inc() }}{{ inc() }}{{ ns.n }}", {}),
    ("loop outside", "[{{ loop.index }}][{{ loop is defined }}]", {}),
    ("reassign loop var", "{% for m in ms %}{% set m = m ~ '!' %}{{ m }}{% endfor %}[{{ m }}]", {"ms": ["a", "b"]}),
    ("set from outer in loop", "{% set x = 10 %}{% for i in range(3) %}{% set x = x + i %}{{ x }},{% endfor %}{{ x }}", {}),
    ("context override", "{% set x = x + 1 %}{{ x }}", {"x": 41}),
    ("loop var after loop", "{% for m in ms %}{% set content = m %}{% endfor %}[{{ content }}]", {"ms": [1]}),
    ("nested set visibility", "{% for a in [1] %}{% set v = 'outer' %}{% for b in [1] %}{{ v }}{% set v = 'inner' %}{{ v }}{% endfor %}{{ v }}{% endfor %}", {}),
    ("if set then loop", "{% if true %}{% set z = 3 %}{% endif %}{% for i in [1] %}{{ z }}{% endfor %}", {}),
    ("loop filter sees outer", "{% set lim = 2 %}{% for i in range(5) if i < lim %}{{ i }}{% endfor %}", {}),
    ("with scope", "{% set a = 1 %}{% with %}{% set a = 2 %}{{ a }}{% endwith %}{{ a }}", {}),
    ("set block scope", "{% set x = 'o' %}{% set y %}{% set x = 'i' %}{{ x }}{% endset %}{{ y }}{{ x }}", {}),
    ("call result concat", "{% macro m(a) %}{{ a }}!{% endmacro %}{{ m('x') ~ m('y') }}{{ m('z')|upper }}", {}),
    ("macro defaults reference args", "{% macro m(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ m(3) }}", {}),
    ("caller varargs error", "{% macro m() %}x{% endmacro %}{{ m(1) }}", {}),
    ("braces in strings", "{{ '}}' }}{{ \"{%\" }}{{ {'a': {'b': 1}} }}{{ '{#' }}", {}),
    ("tuple in for", "{% for x in 1, 2, 3 %}{{ x }}{% endfor %}", {}),
    ("getitem tuple key", "{% set d = {(1, 2): 'pair'} %}{{ d[1, 2] }}{{ d[(1, 2)] }}", {}),
    ("chained filters tests", "{{ messages|selectattr('role', 'equalto', 'user')|list|length }}|{{ messages|map(attribute='content')|select('string')|join(',') }}|{{ (messages|last).role }}", {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]}),
    ("number formatting", "{{ 1/3 }}|{{ 2/3 }}|{{ 1e-7 }}|{{ 123456789012345678 }}|{{ 1.0e16 }}|{{ 9007199254740993.0 }}|{{ 0.1 * 3 }}|{{ 100.0 }}|{{ -1.5e-10 }}|{{ 3.0 * 2 }}", {}),
    ("tojson floats", "{{ [1/3, 1e16, 1e-5, 0.0, -0.0, 100.0, 2.5e300]|tojson }}", {}),
    ("bool arithmetic", "{{ true + true }}|{{ false * 3 }}|{{ true / 2 }}|{{ [1,2][true] }}", {}),
    ("string compare", "{{ 'B' < 'a' }}{{ 'é' > 'z' }}{{ '' < 'a' }}{{ 'ab' < 'b' }}", {}),
    ("trim unicode", "[{{ '\\u3000x\\u00a0 '|trim }}][{{ '\\x1cx\\x1f'|trim }}][{{ ' x'.strip() }}]", {}),
    ("split unicode ws", "{{ 'a\\u3000b\\u00a0c\\x1cd'.split() }}", {}),
]
