/**
 * `cloudplane completion bash|zsh|fish`: a completion script generated from the command
 * tree, so every command and flag added to the tree completes without editing a script.
 * Each script walks the words typed so far down the tree, then offers the subcommands of
 * the command reached, its flags after a `-`, or a flag's choices (--output table|json|yaml).
 */
import type { Command, Option } from 'commander';

interface Node {
  path: string;
  children: string[];
  flags: string[];
  choices: [string, string[]][];
  /** Flags whose value is free text (a name, an id): nothing is offered after them. */
  valueFlags: string[];
}

/** Commands main.ts runs before the program sees the command line (src/main.ts). */
const OUTSIDE_THE_PROGRAM = ['serve', 'team', 'vpn-agent'];

function nodesOf(command: Command, path: string[], inherited: readonly Option[]): Node[] {
  const options = [...inherited, ...command.options];
  const visible = command.commands;
  const spellings = (o: Option) => [o.long, o.short].filter((f): f is string => Boolean(f));
  const node: Node = {
    path: path.join(' '),
    children: [...visible.map((c) => c.name()), ...(path.length === 0 ? OUTSIDE_THE_PROGRAM : [])],
    flags: [...options.flatMap(spellings), '--help'],
    choices: options.flatMap((o) => {
      const choices = o.argChoices;
      return choices ? spellings(o).map((flag): [string, string[]] => [flag, choices]) : [];
    }),
    valueFlags: options.filter((o) => o.required && !o.argChoices).flatMap(spellings),
  };
  // Program-level options apply to every subcommand.
  const passDown = path.length === 0 ? command.options : inherited;
  return [node, ...visible.flatMap((c) => nodesOf(c, [...path, c.name()], passDown))];
}

const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** A shell `case` over command paths, shared by bash and zsh. */
function caseOf(nodes: Node[], words: (node: Node) => string[]): string {
  const arms = nodes.map((n) => `    ${quote(n.path)}) echo ${words(n).map(quote).join(' ')} ;;`);
  return `  case "$1" in\n${arms.join('\n')}\n  esac`;
}

function choicesCase(nodes: Node[]): string {
  const arms = nodes.flatMap((n) => n.choices.map(([flag, values]) => `    ${quote(`${n.path}|${flag}`)}) echo ${values.map(quote).join(' ')} ;;`));
  return `  case "$1|$2" in\n${arms.join('\n')}\n  esac`;
}

function posixHelpers(nodes: Node[]): string {
  return [
    `_cloudplane_children() {\n${caseOf(nodes, (n) => n.children)}\n}`,
    `_cloudplane_flags() {\n${caseOf(nodes, (n) => n.flags)}\n}`,
    `_cloudplane_value_flags() {\n${caseOf(nodes, (n) => n.valueFlags)}\n}`,
    `_cloudplane_choices() {\n${choicesCase(nodes)}\n}`,
  ].join('\n');
}

function bash(nodes: Node[]): string {
  return `# cloudplane completion for bash: source <(cloudplane completion bash)
${posixHelpers(nodes)}
_cloudplane() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" path="" i w
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    if [[ " $(_cloudplane_children "$path") " == *" $w "* ]]; then path="\${path:+$path }$w"; fi
  done
  local choices
  choices="$(_cloudplane_choices "$path" "$prev")"
  if [[ -n "$choices" ]]; then
    COMPREPLY=($(compgen -W "$choices" -- "$cur"))
  elif [[ " $(_cloudplane_value_flags "$path") " == *" $prev "* ]]; then
    COMPREPLY=()
  elif [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(_cloudplane_flags "$path")" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$(_cloudplane_children "$path")" -- "$cur"))
  fi
}
complete -F _cloudplane cloudplane
`;
}

function zsh(nodes: Node[]): string {
  return `#compdef cloudplane
# cloudplane completion for zsh: source <(cloudplane completion zsh), after compinit
${posixHelpers(nodes)}
_cloudplane() {
  local cur="\${words[CURRENT]}" prev="\${words[CURRENT-1]}" path_="" i w choices
  for ((i = 2; i < CURRENT; i++)); do
    w="\${words[i]}"
    if [[ " $(_cloudplane_children "$path_") " == *" $w "* ]]; then path_="\${path_:+$path_ }$w"; fi
  done
  choices="$(_cloudplane_choices "$path_" "$prev")"
  if [[ -n "$choices" ]]; then
    compadd -- \${=choices}
  elif [[ " $(_cloudplane_value_flags "$path_") " == *" $prev "* ]]; then
    return 1
  elif [[ "$cur" == -* ]]; then
    compadd -- \${=$(_cloudplane_flags "$path_")}
  else
    compadd -- \${=$(_cloudplane_children "$path_")}
  fi
}
compdef _cloudplane cloudplane
`;
}

function fish(nodes: Node[]): string {
  const fishCase = (words: (node: Node) => string[]) =>
    nodes.map((n) => `    case ${quote(n.path)}\n        printf '%s\\n' ${words(n).map(quote).join(' ')}`).join('\n');
  const choiceArms = nodes.flatMap((n) =>
    n.choices.map(([flag, values]) => `    case ${quote(`${n.path}|${flag}`)}\n        printf '%s\\n' ${values.map(quote).join(' ')}`),
  );
  return `# cloudplane completion for fish: cloudplane completion fish | source
function __cloudplane_children
    switch "$argv[1]"
${fishCase((n) => n.children)}
    end
end
function __cloudplane_flags
    switch "$argv[1]"
${fishCase((n) => n.flags)}
    end
end
function __cloudplane_value_flags
    switch "$argv[1]"
${fishCase((n) => n.valueFlags)}
    end
end
function __cloudplane_choices
    switch "$argv[1]|$argv[2]"
${choiceArms.join('\n')}
    end
end
function __cloudplane_path
    set -l path ''
    set -l words (commandline -opc)
    set -e words[1]
    for w in $words
        if contains -- $w (__cloudplane_children "$path")
            set path (string trim -- "$path $w")
        end
    end
    echo $path
end
function __cloudplane_complete
    set -l path (__cloudplane_path)
    set -l prev (commandline -opc)[-1]
    set -l cur (commandline -ct)
    set -l choices (__cloudplane_choices "$path" "$prev")
    if test (count $choices) -gt 0
        printf '%s\\n' $choices
    else if contains -- "$prev" (__cloudplane_value_flags "$path")
        return
    else if string match -q -- '-*' "$cur"
        __cloudplane_flags "$path"
    else
        __cloudplane_children "$path"
    end
end
complete -c cloudplane -f -a '(__cloudplane_complete)'
`;
}

export const SHELLS = { bash, zsh, fish };
export type Shell = keyof typeof SHELLS;

export function completionScript(root: Command, shell: Shell): string {
  return SHELLS[shell](nodesOf(root, [], []));
}
