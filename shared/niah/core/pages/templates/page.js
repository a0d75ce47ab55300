(function(){
const table=document.getElementById('samples');if(!table)return;
const data=JSON.parse(document.getElementById('sample-data').textContent);
const columns=data.columns,numeric=new Set(data.numeric),extra=new Set(data.extra),all=data.rows;
const size=parseInt(table.dataset.pageRows,10),body=table.tBodies[0];
const heads=table.tHead.rows[0].cells,at=function(name){return columns.indexOf(name);};
const outcomeAt=at('outcome'),errorAt=at('error_kind');
const texts=all.map(function(row){return row.map(function(v){return v===null?'':String(v);})
.join(' ').toLowerCase();});
const filter=document.getElementById('filter'),outcome=document.getElementById('outcome');
const shown=document.getElementById('shown'),label=document.getElementById('page');
const previous=document.getElementById('previous'),next=document.getElementById('next');
let order=all.map(function(_,i){return i;}),view=order,page=0,printing=false;
function td(name,value){const cell=document.createElement('td');
if(value===null){cell.className='none';cell.textContent='–';}
else if(numeric.has(name)){cell.className='num';cell.dataset.sort=value;}
else cell.className=name==='cell_id'?'id':'text';
if(value!==null)cell.textContent=String(value);
if(extra.has(name))cell.classList.add('extra');return cell;}
const toggle=document.getElementById('columns'),few=toggle.textContent;
toggle.addEventListener('click',function(){const wide=table.classList.toggle('all');
toggle.textContent=wide?'key columns':few;});
function render(){const pages=Math.max(1,Math.ceil(view.length/size));
page=Math.min(page,pages-1);
const slice=printing?view:view.slice(page*size,(page+1)*size);
body.replaceChildren.apply(body,slice.map(function(i){const row=all[i];
const tr=document.createElement('tr');tr.dataset.outcome=row[outcomeAt]===null?'':row[outcomeAt];
if(row[errorAt]!==null)tr.dataset.failed='';
columns.forEach(function(name,c){tr.appendChild(td(name,row[c]));});return tr;}));
shown.textContent=view.length+' of '+all.length+' samples';
label.textContent='page '+(page+1)+' of '+pages;
previous.disabled=page===0;next.disabled=page>=pages-1;}
function apply(){const text=filter.value.toLowerCase(),want=outcome.value;
view=order.filter(function(i){return(!want||all[i][outcomeAt]===want)&&
(!text||texts[i].includes(text));});page=0;render();}
filter.addEventListener('input',apply);outcome.addEventListener('change',apply);
previous.addEventListener('click',function(){page--;render();});
next.addEventListener('click',function(){page++;render();});
window.addEventListener('beforeprint',function(){printing=true;render();});
window.addEventListener('afterprint',function(){printing=false;render();});
Array.from(heads).forEach(function(head,c){head.addEventListener('click',function(){
const isNumber=head.hasAttribute('data-numeric'),up=!head.classList.contains('asc');
for(const other of heads)other.classList.remove('asc','desc');
head.classList.add(up?'asc':'desc');
function key(i){const v=all[i][c];if(isNumber)return v===null?-Infinity:v;
return v===null?'':String(v);}
order=order.slice().sort(function(a,b){const x=key(a),y=key(b);
const d=isNumber?x-y:String(x).localeCompare(String(y));return up?d:-d;});apply();});});
apply();
})();
